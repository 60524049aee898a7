/* chat_template_impl.h - between the chat template's files: the text being
 * made (with the spans of the caller's strings in it), Python's str methods
 * the templates call, and the Qwen3-Coder family (chat_template_coder.c). */
#ifndef ENC_TOKENIZER_CHAT_TEMPLATE_IMPL_H
#define ENC_TOKENIZER_CHAT_TEMPLATE_IMPL_H

#include <stddef.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_impl.h"

/* --- chat_text.c ------------------------------------------------------------------------- */

typedef struct chat__str {
    const char *p;
    size_t n;
} chat__str;

/* The C string p (NULL is ""). */
chat__str chat__s(const char *p);

/* The text being made, and where in it the caller's strings went. */
typedef struct chat__out {
    tok__bytes b;
    size_t *spans; /* [2 * n_spans] begin, end of each caller's string; NULL: not kept */
    size_t n_spans, cap_spans;
    int keep_spans;
} chat__out;

/* The template's own text. */
enc_status chat__put(chat__out *out, const char *s);
/* A string of the caller's (a content, reasoning, a tool call's name or
 * arguments, the tool definitions): appended, and its span kept when asked. */
enc_status chat__puts(chat__out *out, chat__str s);

chat__str chat__lstrip_nl(chat__str s);
chat__str chat__rstrip_nl(chat__str s);
/* Python's str.strip(): the whitespace str.isspace() names, Unicode's too. */
chat__str chat__strip(chat__str s);
/* Offset of the first (last) occurrence of needle in s, or -1. */
long chat__find_str(chat__str s, chat__str needle, int last);
long chat__find(chat__str s, const char *needle, int last);
int chat__starts(chat__str s, const char *x);
int chat__ends(chat__str s, const char *x);
int chat__is(const chat_message *m, const char *role);

/* --- chat_template_coder.c ---------------------------------------------------------------- */

/* 1 when text is Qwen3-Coder's template (its statements, and the literals
 * the renderer takes from it: the default system prompt, the tools
 * preamble, the instructions after the tools). */
int chat__coder_detect(const char *text);
/* The conversation under t's Qwen3-Coder template. */
enc_status chat__coder(const tokenizer *t, const chat_message *m, size_t n,
                       const chat_template_opts *o, chat__out *out);

#endif
