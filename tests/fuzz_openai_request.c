/* fuzz_openai_request.c - libFuzzer target for the server's request parser.
 *
 * Each input is parsed as all five kinds of request (completion, chat,
 * tokenize, detokenize, embedding) and as a Responses body. A request that parses
 * must satisfy what the server relies on; one that does not must come with a
 * 4xx status and a message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai_request.h"
#include "server/responses_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(const oai_request *r)
{
    if (r->n < 1 || r->n > OAI_MAX_N) abort();
    if (r->top_logprobs < 0 || r->top_logprobs > OAI_MAX_TOP_LOGPROBS) abort();
    if (r->max_tokens < 0 || r->max_tokens > ((int64_t)1 << 30)) abort();
    if (r->include_usage && !r->stream) abort();
    const encore_sampling *s = &r->sampling;
    if (s->n_stop > OAI_MAX_STOP || (s->n_stop && !s->stop)) abort();
    for (size_t i = 0; i < s->n_stop; i++)
        if (!s->stop[i] || !s->stop[i][0]) abort();
    if (s->n_stop_token_ids > OAI_MAX_STOP_IDS) abort();
    for (size_t i = 0; i < s->n_stop_token_ids; i++)
        if (s->stop_token_ids[i] < 0) abort();
    if (!(s->temperature >= 0) || !(s->top_p > 0 && s->top_p <= 1) || !(s->min_p >= 0))
        abort();
    if (!(s->repetition_penalty > 0) || s->min_tokens < 0) abort();
    if (r->max_tokens && s->min_tokens > r->max_tokens) abort();
    /* prompts: each text or (non-empty, detokenize's may be empty) ids; a
     * batch only for completions */
    size_t max_prompts = r->kind == OAI_COMPLETION ? (size_t)OAI_MAX_PROMPTS
                         : r->kind == OAI_EMBEDDING ? (size_t)OAI_MAX_INPUTS
                                                    : 1;
    if (r->n_prompts > max_prompts) abort();
    if ((r->kind == OAI_COMPLETION || r->kind == OAI_DETOKENIZE || r->kind == OAI_EMBEDDING) &&
        !r->n_prompts)
        abort();
    if (r->dimensions < 0 || r->truncate_prompt_tokens < -1) abort();
    for (size_t p = 0; p < r->n_prompts; p++) {
        const oai_prompt *q = &r->prompts[p];
        if (r->kind != OAI_DETOKENIZE && (!q->text == !q->ids || (q->ids && !q->n_ids))) abort();
        for (size_t i = 0; i < q->n_ids; i++)
            if (q->ids[i] < 0) abort();
    }
    if (r->kind == OAI_CHAT && r->n_messages == 0) abort();
    for (size_t i = 0; i < r->n_messages; i++) {
        if (!r->messages[i].role || !r->messages[i].content) abort();
        (void)strlen(r->messages[i].content);
        for (size_t k = 0; k < r->messages[i].n_tool_calls; k++)
            if (!r->messages[i].tool_calls[k].name || !r->messages[i].tool_calls[k].arguments)
                abort();
    }
    /* tools: names given, the JSON kept exactly when there are some, a named
     * choice among them */
    if (r->n_tools > 128 || !r->tools_json != !r->n_tools) abort();
    if ((r->tool_choice == OAI_TOOL_NAMED) != (r->tool_choice_name != NULL)) abort();
    int named = r->tool_choice != OAI_TOOL_NAMED;
    for (size_t k = 0; k < r->n_tools; k++)
        named |= !strcmp(r->tool_names[k], r->tool_choice_name ? r->tool_choice_name : "");
    if (!named || (r->tool_choice != OAI_TOOL_NONE && !r->n_tools)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes, not NUL-terminated: the parser must
     * not read past the end */
    char *body = malloc(size ? size : 1);
    if (!body) return 0;
    memcpy(body, data, size);
    for (int kind = OAI_COMPLETION; kind <= OAI_EMBEDDING + 1; kind++) {
        oai_request r;
        oai_error err;
        memset(&err, 0, sizeof err);
        int ok = kind > OAI_EMBEDDING /* the last round: a Responses body */
                     ? oai_responses_parse(body, size, NULL, &r, &err)
                     : oai_request_parse(body, size, (oai_kind)kind, NULL, &r, &err);
        if (ok) {
            if (kind > OAI_EMBEDDING && (!r.responses || !r.responses_echo)) abort();
            fuzz_check(&r);
            oai_request_free(&r);
        } else if (err.http_status < 400 || !err.message[0]) {
            abort();
        }
    }
    free(body);
    return 0;
}
