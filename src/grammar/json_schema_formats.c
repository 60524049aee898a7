/* json_schema_formats.c - string formats as grammar rules. Each rule accepts
 * a subset of what its RFC allows and nothing outside it: dates check the
 * days of each month (February to the 28th, leap years aside), years are
 * 1000-9999, ipv4 octets have no leading zeros. */
#include <string.h>

#include "grammar/json_schema_formats.h"

enum { FMT_DATE = 1, FMT_TIME = 2, FMT_DATE_TIME = 4, FMT_UUID = 8, FMT_EMAIL = 16, FMT_IPV4 = 32 };

static const struct {
    const char *name;
    unsigned bit;
    unsigned needs;   /* other formats its rule refers to */
    const char *body; /* rule names in it start with $, the prefix */
} fmt_rules[] = {
    {"date", FMT_DATE, 0,
     "[1-9] [0-9]{3} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | "
     "\"3\" [01] )"
     " | ( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" )"
     " | \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) )"},
    {"time", FMT_TIME, 0,
     "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )?"
     " ( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )"},
    {"date-time", FMT_DATE_TIME, FMT_DATE | FMT_TIME, "$fmt-date \"T\" $fmt-time"},
    {"uuid", FMT_UUID, 0,
     "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}"},
    {"email", FMT_EMAIL, 0,
     "[a-zA-Z0-9_+-]{1,32} ( \".\" [a-zA-Z0-9_+-]{1,32} ){0,3} \"@\" [a-zA-Z0-9]{1,32}"
     " ( \".\" [a-zA-Z0-9]{1,32} ){1,3}"},
    {"ipv4", FMT_IPV4, 0, "$ipv4-octet \".\" $ipv4-octet \".\" $ipv4-octet \".\" $ipv4-octet"},
};

unsigned json_schema_format_bit(const char *name)
{
    for (size_t i = 0; i < sizeof fmt_rules / sizeof *fmt_rules; i++)
        if (!strcmp(fmt_rules[i].name, name)) return fmt_rules[i].bit;
    return 0;
}

/* body with each '$' replaced by the prefix. */
static void fmt__body(ebnf_buf *b, const char *prefix, const char *body)
{
    for (const char *s = body; *s; s++) {
        if (*s == '$')
            ebnf_buf_printf(b, "%s", prefix);
        else
            ebnf_buf_append(b, s, 1);
    }
}

void json_schema_formats_write(ebnf_buf *b, const char *prefix, unsigned bits)
{
    for (size_t i = 0; i < sizeof fmt_rules / sizeof *fmt_rules; i++)
        if (bits & fmt_rules[i].bit) bits |= fmt_rules[i].needs;
    for (size_t i = 0; i < sizeof fmt_rules / sizeof *fmt_rules; i++) {
        if (!(bits & fmt_rules[i].bit)) continue;
        ebnf_buf_printf(b, "%sfmt-%s ::= ", prefix, fmt_rules[i].name);
        fmt__body(b, prefix, fmt_rules[i].body);
        ebnf_buf_append(b, "\n", 1);
    }
    if (bits & FMT_IPV4)
        ebnf_buf_printf(b,
                        "%sipv4-octet ::= \"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | "
                        "[1-9] [0-9] | [0-9]\n",
                        prefix);
}
