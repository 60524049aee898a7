/* log.h - leveled logging to stderr.
 *
 * The level comes from ENCORE_LOG (error, warn, info, debug; default warn) or
 * from enc_log_set_level(). Messages go to stderr, one line each. */
#ifndef ENC_BASE_LOG_H
#define ENC_BASE_LOG_H

typedef enum enc_log_level {
    ENC_LOG_ERROR = 0,
    ENC_LOG_WARN,
    ENC_LOG_INFO,
    ENC_LOG_DEBUG,
} enc_log_level;

void enc_log_set_level(enc_log_level level);
enc_log_level enc_log_get_level(void);
void enc_log(enc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define enc_log_error(...) enc_log(ENC_LOG_ERROR, __VA_ARGS__)
#define enc_log_warn(...) enc_log(ENC_LOG_WARN, __VA_ARGS__)
#define enc_log_info(...) enc_log(ENC_LOG_INFO, __VA_ARGS__)
#define enc_log_debug(...) enc_log(ENC_LOG_DEBUG, __VA_ARGS__)

#endif
