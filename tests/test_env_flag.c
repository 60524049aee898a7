/* test_env_flag.c - the yes/no words of environment variables
 * (src/base/env_flag.h), which the CLI's switches and the backends'
 * (ENCORE_CPU_REPACK, ENCORE_VK_*) read alike:
 *
 *   words    every yes and no word in three cases, "" as no, and values that
 *            are neither (" 1", "2", "yes please", "of") as -1
 *   env      unset or empty gives the default either way; a word gives its
 *            value whatever the default; a value that is neither keeps the
 *            default
 *
 * usage: test_env_flag */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/env_flag.h"
#include "check.h"

static const char *const yes_words[] = {"1", "true", "yes", "on"};
static const char *const no_words[] = {"0", "false", "no", "off"};
static const char *const neither[] = {" 1", "2", "yes please", "of", "truee", "-0", "0 "};

/* w in lower case, upper case and with its first letter capitalised. */
static void cases_of(const char *w, char out[3][16])
{
    for (int c = 0; c < 3; c++) {
        size_t n = strlen(w);
        for (size_t i = 0; i <= n; i++) {
            int up = c == 1 || (c == 2 && i == 0);
            out[c][i] = (char)(up ? toupper((unsigned char)w[i]) : w[i]);
        }
    }
}

static void test_words(void)
{
    char v[3][16];
    for (size_t i = 0; i < sizeof yes_words / sizeof yes_words[0]; i++) {
        cases_of(yes_words[i], v);
        for (int c = 0; c < 3; c++)
            CHECK(enc_yes_no(v[c]) == 1);
    }
    for (size_t i = 0; i < sizeof no_words / sizeof no_words[0]; i++) {
        cases_of(no_words[i], v);
        for (int c = 0; c < 3; c++)
            CHECK(enc_yes_no(v[c]) == 0);
    }
    CHECK(enc_yes_no("") == 0);
    for (size_t i = 0; i < sizeof neither / sizeof neither[0]; i++)
        CHECK(enc_yes_no(neither[i]) == -1);
    printf("ok words\n");
}

static void test_env(void)
{
    const char *name = "ENCORE_TEST_ENV_FLAG";
    unsetenv(name);
    CHECK(enc_env_flag(name, true) && !enc_env_flag(name, false));
    setenv(name, "", 1);
    CHECK(enc_env_flag(name, true) && !enc_env_flag(name, false));
    for (int dflt = 0; dflt < 2; dflt++) {
        for (size_t i = 0; i < sizeof yes_words / sizeof yes_words[0]; i++) {
            setenv(name, yes_words[i], 1);
            CHECK(enc_env_flag(name, dflt));
        }
        for (size_t i = 0; i < sizeof no_words / sizeof no_words[0]; i++) {
            setenv(name, no_words[i], 1);
            CHECK(!enc_env_flag(name, dflt));
        }
        for (size_t i = 0; i < sizeof neither / sizeof neither[0]; i++) {
            setenv(name, neither[i], 1);
            CHECK(enc_env_flag(name, dflt) == (dflt == 1));
        }
    }
    unsetenv(name);
    printf("ok env\n");
}

int main(void)
{
    test_words();
    test_env();
    if (check_failures) fprintf(stderr, "test_env_flag: %d checks failed\n", check_failures);
    return check_failures != 0;
}
