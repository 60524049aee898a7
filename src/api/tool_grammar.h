/* tool_grammar.h - an enforced tool choice as a grammar: the EBNF text of
 * the <tool_call> blocks a request's tools allow (encore_request.tool_calls,
 * .tool_call_name, .tool_call_thinking), each call's arguments constrained
 * by its tool's parameters schema. structured.c compiles it like any other
 * constraint. */
#ifndef ENC_API_TOOL_GRAMMAR_H
#define ENC_API_TOOL_GRAMMAR_H

#include "base/status.h"
#include "encore.h"

/* The EBNF (root rule "root", *ebnf malloc'ed) for r->tool_calls. Bad
 * tools, an unknown tool_call_name or a parameters schema the compiler does
 * not support are ENC_ERR_INVALID_ARGUMENT, the message naming the tool and
 * the keyword. */
enc_status api_tool_grammar_ebnf(const encore_request *r, char **ebnf);

#endif
