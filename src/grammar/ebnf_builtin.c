/* ebnf_builtin.c - the fixed grammars: JSON values in encore's layout (one
 * space after ':' and ',', nothing else between tokens), "any JSON object",
 * and a choice among strings. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/ebnf_builtin.h"

/* Numbers are bounded (16 integer digits, 16 fraction digits, a 3-digit
 * exponent) so that a model without a preference still ends them. */
void ebnf_json_basics(ebnf_buf *b, const char *p)
{
    ebnf_buf_printf(
        b,
        "%svalue ::= %sobject | %sarray | %sstring | %snumber | \"true\" | \"false\" | \"null\"\n"
        "%sobject ::= \"{\" ( %sstring \": \" %svalue ( \", \" %sstring \": \" %svalue )* )? "
        "\"}\"\n"
        "%sarray ::= \"[\" ( %svalue ( \", \" %svalue )* )? \"]\"\n"
        "%sstring ::= \"\\\"\" %schar* \"\\\"\"\n"
        "%schar ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" %shex4 )\n"
        "%shex4 ::= [0-9a-cA-Ce-fE-F] %shex %shex %shex | [dD] [0-7] %shex %shex\n"
        "%shex ::= [0-9a-fA-F]\n"
        "%sint ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"
        "%snumber ::= %sint ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?\n",
        p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
}

enc_status grammar_json_object_to_ebnf(const char *rule_prefix, char **ebnf_out)
{
    const char *p = rule_prefix ? rule_prefix : "";
    ebnf_buf b = {0};
    ebnf_buf_printf(&b, "%sroot ::= %sobject\n", p, p);
    ebnf_json_basics(&b, p);
    return ebnf_buf_finish(&b, ebnf_out);
}

/* Text without "</think>" (and not ending inside a partial "</think>"). */
static const char think_regex[] =
    "<think>\n([^<]|<+([^</]|/([^t<]|t([^h<]|h([^i<]|i([^n<]|n([^k<]|k[^><])))))))*\n</think>\n\n";

enc_status grammar_think_to_ebnf(int opened, const char *rule_prefix, char **ebnf_out)
{
    return grammar_regex_to_ebnf(think_regex + (opened ? strlen("<think>\n") : 0), rule_prefix,
                                 ebnf_out);
}

static char json_object_text[2048];
static pthread_once_t json_object_once = PTHREAD_ONCE_INIT;

static void json_object_make(void)
{
    char *text = NULL;
    ENC_ASSERT(grammar_json_object_to_ebnf("", &text) == ENC_OK &&
               strlen(text) < sizeof json_object_text);
    memcpy(json_object_text, text, strlen(text) + 1);
    free(text);
}

const char *grammar_json_object_ebnf(void)
{
    pthread_once(&json_object_once, json_object_make);
    return json_object_text;
}

enc_status grammar_choice_to_ebnf(const char *const *choices, size_t n, const char *rule_prefix,
                                  char **ebnf_out)
{
    *ebnf_out = NULL;
    if (!n || !choices) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "choice: no choices given");
    ebnf_buf b = {0};
    ebnf_buf_printf(&b, "%sroot ::= ", rule_prefix ? rule_prefix : "");
    for (size_t i = 0; i < n; i++) {
        if (!choices[i]) {
            ebnf_buf_free(&b);
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "choice %zu: NULL", i);
        }
        if (i) ebnf_buf_append(&b, " | ", 3);
        char what[32];
        snprintf(what, sizeof what, "choice %zu", i);
        enc_status st = ebnf_buf_literal(&b, choices[i], strlen(choices[i]), what);
        if (st != ENC_OK) {
            ebnf_buf_free(&b);
            return st;
        }
    }
    ebnf_buf_append(&b, "\n", 1);
    return ebnf_buf_finish(&b, ebnf_out);
}
