/* env_flag.h - the words a yes/no environment variable takes, one set for
 * every layer: 1, true, yes, on; 0, false, no, off (any case). */
#ifndef ENC_BASE_ENV_FLAG_H
#define ENC_BASE_ENV_FLAG_H

#include <stdbool.h>

/* 1 for a yes word, 0 for a no word or "", -1 for anything else. */
int enc_yes_no(const char *value);

/* The variable `name` as a yes/no: dflt when unset or empty; a value that is neither
 * keeps dflt and logs a warning naming the variable and the value (for the
 * backends' switches, which cannot stop the program; the CLI's refuse it). */
bool enc_env_flag(const char *name, bool dflt);

#endif
