/* log.c - leveled logging to stderr, level from ENCORE_LOG. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int enc__log_level = -1; /* -1: not yet read from the environment */

static enc_log_level enc__log_level_from_env(void)
{
    const char *s = getenv("ENCORE_LOG");
    if (!s) return ENC_LOG_WARN;
    if (!strcmp(s, "error")) return ENC_LOG_ERROR;
    if (!strcmp(s, "info")) return ENC_LOG_INFO;
    if (!strcmp(s, "debug")) return ENC_LOG_DEBUG;
    if (strcmp(s, "warn"))
        fprintf(stderr,
                "encore: warn: ENCORE_LOG=\"%s\" is not error, warn, info or debug; "
                "logging warnings and errors\n",
                s);
    return ENC_LOG_WARN;
}

void enc_log_set_level(enc_log_level level) { enc__log_level = (int)level; }

enc_log_level enc_log_get_level(void)
{
    if (enc__log_level < 0) enc__log_level = (int)enc__log_level_from_env();
    return (enc_log_level)enc__log_level;
}

void enc_log(enc_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (level > enc_log_get_level()) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "encore: %s: %s\n", names[level], line);
}
