/* json_exact.c - compact JSON with exact numbers (json_exact.h). */
#include "base/json_exact.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_number_text(double d, char buf[32])
{
    if (d == floor(d) && fabs(d) <= 9007199254740992.0) { /* 2^53: every integer exact */
        snprintf(buf, 32, "%.0f", d);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) return;
    }
}

typedef struct json__text {
    char *s;
    size_t n, cap;
    int oom, bad_number;
} json__text;

static void json__put(json__text *t, const char *s, size_t n)
{
    if (t->oom) return;
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *p = realloc(t->s, cap);
        if (!p) {
            t->oom = 1;
            return;
        }
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
}

/* A string as cJSON escapes it. */
static void json__string(json__text *t, const char *s)
{
    cJSON *tmp = cJSON_CreateString(s);
    char *q = tmp ? cJSON_PrintUnformatted(tmp) : NULL;
    if (q)
        json__put(t, q, strlen(q));
    else
        t->oom = 1;
    free(q);
    cJSON_Delete(tmp);
}

static void json__value(json__text *t, const cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        char buf[32];
        if (!isfinite(v->valuedouble)) {
            t->bad_number = 1;
            return;
        }
        json_number_text(v->valuedouble, buf);
        json__put(t, buf, strlen(buf));
    } else if (cJSON_IsString(v)) {
        json__string(t, v->valuestring);
    } else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        int object = cJSON_IsObject(v);
        json__put(t, object ? "{" : "[", 1);
        for (const cJSON *c = v->child; c && !t->oom && !t->bad_number; c = c->next) {
            if (c != v->child) json__put(t, ",", 1);
            if (object) {
                json__string(t, c->string);
                json__put(t, ":", 1);
            }
            json__value(t, c);
        }
        json__put(t, object ? "}" : "]", 1);
    } else {
        const char *lit = cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false" : "null";
        json__put(t, lit, strlen(lit));
    }
}

char *json_print_exact(const cJSON *v, int *bad_number)
{
    json__text t = {0};
    json__value(&t, v);
    if (bad_number) *bad_number = t.bad_number;
    if (t.oom || t.bad_number || !t.s) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
