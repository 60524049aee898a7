/* chat_text.c - the text a chat template makes: the output buffer that
 * keeps where the caller's strings went (for tokenizer_encode_plain), and
 * the Python str methods the templates call, on byte ranges. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/chat_template_impl.h"

chat__str chat__s(const char *p)
{
    return (chat__str){p ? p : "", p ? strlen(p) : 0};
}

enc_status chat__put(chat__out *out, const char *s)
{
    return tok__bytes_append(&out->b, s, strlen(s));
}

enc_status chat__puts(chat__out *out, chat__str s)
{
    size_t at = out->b.len;
    ENC_TRY(tok__bytes_append(&out->b, s.p, s.n));
    if (!out->keep_spans || s.n == 0) return ENC_OK;
    if (out->n_spans && out->spans[2 * out->n_spans - 1] == at) { /* adjacent: one span */
        out->spans[2 * out->n_spans - 1] = out->b.len;
        return ENC_OK;
    }
    if (out->n_spans == out->cap_spans) {
        size_t cap = out->cap_spans ? 2 * out->cap_spans : 8;
        size_t *p = realloc(out->spans, 2 * cap * sizeof *p);
        if (!p) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "chat template: %zu spans", cap);
        out->spans = p;
        out->cap_spans = cap;
    }
    out->spans[2 * out->n_spans] = at;
    out->spans[2 * out->n_spans + 1] = out->b.len;
    out->n_spans++;
    return ENC_OK;
}

chat__str chat__lstrip_nl(chat__str s)
{
    while (s.n && s.p[0] == '\n')
        s.p++, s.n--;
    return s;
}

chat__str chat__rstrip_nl(chat__str s)
{
    while (s.n && s.p[s.n - 1] == '\n')
        s.n--;
    return s;
}

long chat__find_str(chat__str s, chat__str needle, int last)
{
    long at = -1;
    for (size_t i = 0; i + needle.n <= s.n; i++)
        if (memcmp(s.p + i, needle.p, needle.n) == 0) {
            at = (long)i;
            if (!last) break;
        }
    return at;
}

long chat__find(chat__str s, const char *needle, int last)
{
    return chat__find_str(s, chat__s(needle), last);
}

/* Python's str.isspace() of code point cp. */
static int chat__py_space(unsigned cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* The code point of the UTF-8 sequence p[0..k) (well formed: the text was checked). */
static unsigned chat__cp(const unsigned char *p, size_t k)
{
    static const unsigned lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    unsigned cp = p[0] & lead_mask[k];
    for (size_t i = 1; i < k; i++)
        cp = cp << 6 | (p[i] & 0x3Fu);
    return cp;
}

static size_t chat__seq_len(unsigned char c)
{
    return c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

chat__str chat__strip(chat__str s)
{
    const unsigned char *u = (const unsigned char *)s.p;
    size_t b = 0, e = s.n;
    while (b < e) {
        size_t k = chat__seq_len(u[b]);
        if (k > e - b || !chat__py_space(chat__cp(u + b, k))) break;
        b += k;
    }
    while (e > b) {
        size_t k = 1;
        while (k < 4 && e - k > b && (u[e - k] & 0xC0) == 0x80)
            k++;
        if (chat__seq_len(u[e - k]) != k || !chat__py_space(chat__cp(u + e - k, k))) break;
        e -= k;
    }
    return (chat__str){s.p + b, e - b};
}

int chat__starts(chat__str s, const char *x)
{
    size_t k = strlen(x);
    return s.n >= k && memcmp(s.p, x, k) == 0;
}

int chat__ends(chat__str s, const char *x)
{
    size_t k = strlen(x);
    return s.n >= k && memcmp(s.p + s.n - k, x, k) == 0;
}

int chat__is(const chat_message *m, const char *role)
{
    return strcmp(m->role, role) == 0;
}
