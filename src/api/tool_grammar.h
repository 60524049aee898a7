/* tool_grammar.h - an enforced tool choice as a grammar: the EBNF text of
 * the <tool_call> blocks a request's tools allow (encore_request.tool_calls,
 * .tool_call_name, .think_first), in the syntax of the model's chat
 * template (hermes JSON, or Qwen3-Coder's XML), each call's arguments
 * constrained by its tool's parameters schema. structured.c compiles it like
 * any other constraint. */
#ifndef ENC_API_TOOL_GRAMMAR_H
#define ENC_API_TOOL_GRAMMAR_H

#include "base/status.h"
#include "encore.h"
#include "tokenizer/chat_template.h"

/* The EBNF (root rule "root", *ebnf malloc'ed) for r->tool_calls, the calls
 * written in `format` (chat_template_tool_format of the model's tokenizer).
 * Bad tools, an unknown tool_call_name or a parameters schema the format
 * cannot carry are ENC_ERR_INVALID_ARGUMENT, the message naming the tool,
 * the parameter (XML) and the keyword. */
enc_status api_tool_grammar_ebnf(const encore_request *r, chat_tool_format format, char **ebnf);

#endif
