/* structured.h - structured outputs in the API: a request's constraint
 * fields (encore_request.json_schema, .regex, .grammar, .choices,
 * .json_object) compiled to a grammar and run as the engine's per-request
 * constraint (engine_constraint) by a grammar matcher.
 *
 * One api_structured per engine holds the model's vocabulary as a grammar
 * vocabulary (built on first use: every id's bytes, special and added tokens
 * never allowed) and a small cache of compiled grammars keyed by their EBNF
 * text, so that requests with the same schema share one grammar and its
 * warm state tables. */
#ifndef ENC_API_STRUCTURED_H
#define ENC_API_STRUCTURED_H

#include "encore.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

typedef struct api_structured api_structured;

/* tok may be NULL (then every constrained request is refused); n_vocab is
 * the model's (its logits row). */
enc_status api_structured_create(const tokenizer *tok, int32_t n_vocab, api_structured **out);
void api_structured_destroy(api_structured *s);

/* Whether r asks for a constraint; more than one field set is refused. */
enc_status api_structured_wanted(const encore_request *r, int *wanted);

/* The constraint for r (r must want one): compiles (or finds) its grammar
 * and makes a matcher whose end ids are what ends the request in the engine:
 * the model's EOS ids eos_ids[n_eos] (unless r ignores EOS) and r's stop
 * token ids. Errors (ENC_ERR_INVALID_ARGUMENT) name the field and
 * what is wrong: "response_format.json_schema: unsupported keyword ...". On
 * success out->state belongs to whoever hands it to the engine (destroy
 * frees it). */
enc_status api_structured_constraint(api_structured *s, const encore_request *r, const int32_t *eos_ids,
                                     int n_eos, engine_constraint *out);

#endif
