/* status.c - status names and the thread-local last-error message. */
#include "base/status.h"

#include <stdarg.h>
#include <string.h>

enum { ENC__ERROR_MAX = 1024 };
static _Thread_local char enc__last_error[ENC__ERROR_MAX];

const char *enc_status_to_string(enc_status s)
{
    switch (s) {
    case ENC_OK: return "ok";
    case ENC_ERR_INVALID_ARGUMENT: return "invalid argument";
    case ENC_ERR_IO: return "i/o error";
    case ENC_ERR_FORMAT: return "malformed input";
    case ENC_ERR_UNSUPPORTED: return "unsupported";
    case ENC_ERR_OUT_OF_MEMORY: return "out of memory";
    case ENC_ERR_CAPTURE: return "capture contract violated";
    case ENC_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

enc_status enc_fail(enc_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(enc__last_error, sizeof enc__last_error, fmt, ap);
    va_end(ap);
    return s;
}

enc_status enc_fail_context(enc_status s, const char *fmt, ...)
{
    char old[ENC__ERROR_MAX];
    memcpy(old, enc__last_error, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(enc__last_error, sizeof enc__last_error, fmt, ap);
    va_end(ap);
    /* Append ": old", cut to the buffer (a long message may lose its tail). */
    size_t at = n < 0 ? 0 : (size_t)n;
    if (at > sizeof enc__last_error - 1) at = sizeof enc__last_error - 1;
    const char *parts[2] = {": ", old};
    for (int p = 0; p < 2; p++)
        for (const char *c = parts[p]; *c && at + 1 < sizeof enc__last_error; c++)
            enc__last_error[at++] = *c;
    if (at < sizeof enc__last_error) enc__last_error[at] = '\0';
    return s;
}

const char *enc_last_error(void) { return enc__last_error; }

void enc_clear_error(void) { enc__last_error[0] = '\0'; }
