/* env_flag.c - yes/no environment variables (env_flag.h). */
#define _POSIX_C_SOURCE 200809L /* strcasecmp */
#include "base/env_flag.h"

#include <stdlib.h>
#include <strings.h>

#include "base/log.h"

int enc_yes_no(const char *value)
{
    static const char *const no[] = {"", "0", "false", "no", "off"};
    static const char *const yes[] = {"1", "true", "yes", "on"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (!strcasecmp(value, no[i])) return 0;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!strcasecmp(value, yes[i])) return 1;
    return -1;
}

bool enc_env_flag(const char *name, bool dflt)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt; /* empty: unset, as every variable's */
    int yes = enc_yes_no(v);
    if (yes >= 0) return yes == 1;
    enc_log_warn("%s=\"%s\" is not 1 or 0 (true/false, yes/no, on/off); keeping the default, %s",
                 name, v, dflt ? "on" : "off");
    return dflt;
}
