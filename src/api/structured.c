/* structured.c - a request's structured-output fields as an engine
 * constraint run by a grammar matcher (see structured.h).
 *
 * The grammar cache: up to API_GRAMMARS entries keyed by EBNF text, each
 * reference-counted (the cache holds one, every live matcher one); the
 * least recently used unreferenced... entry is dropped when full. */
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "api/structured.h"
#include "api/tool_grammar.h"
#include "grammar/ebnf_buf.h"
#include "grammar/grammar.h"

#define API_GRAMMARS 16

typedef struct api_grammar {
    char *ebnf; /* the key */
    grammar *g;
    int refs;      /* the cache's own + one per matcher */
    uint64_t used; /* last use, for eviction */
} api_grammar;

struct api_structured {
    const tokenizer *tok;
    int32_t n_vocab;
    pthread_mutex_t mu;
    grammar_vocab *vocab; /* built on first use */
    api_grammar *cache[API_GRAMMARS];
    uint64_t clock;
};

typedef struct api_matcher {
    api_structured *s;
    api_grammar *ag;
    grammar_matcher *m;
} api_matcher;

enc_status api_structured_create(const tokenizer *tok, int32_t n_vocab, api_structured **out)
{
    *out = NULL;
    api_structured *s = calloc(1, sizeof *s);
    if (!s) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "structured outputs: out of memory");
    s->tok = tok;
    s->n_vocab = n_vocab;
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return ENC_OK;
}

static void api__grammar_unref(api_grammar *ag)
{
    if (--ag->refs) return;
    grammar_free(ag->g);
    free(ag->ebnf);
    free(ag);
}

void api_structured_destroy(api_structured *s)
{
    if (!s) return;
    for (int i = 0; i < API_GRAMMARS; i++)
        if (s->cache[i]) api__grammar_unref(s->cache[i]);
    grammar_vocab_free(s->vocab);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* The vocabulary: every id the tokenizer has bytes for, but the special
 * tokens (<|im_end|>, <|endoftext|>, ...), which a constraint never writes.
 * The added tokens that are not special (Qwen3's <think>, </think>,
 * <tool_call>, </tool_call>) stand for their text, as in xgrammar: a model
 * writes them whole, and a think block or a call it is held to must let it.
 * Lock held. */
static enc_status api__vocab(api_structured *s)
{
    if (s->vocab) return ENC_OK;
    const uint8_t **bytes = calloc((size_t)s->n_vocab, sizeof *bytes);
    size_t *lens = calloc((size_t)s->n_vocab, sizeof *lens);
    if (!bytes || !lens) {
        free(bytes);
        free(lens);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "structured outputs: out of memory");
    }
    int32_t n_tok = tokenizer_vocab_size(s->tok);
    for (int32_t id = 0; id < s->n_vocab && id < n_tok; id++)
        if (!tokenizer_is_special(s->tok, id))
            bytes[id] = (const uint8_t *)tokenizer_token_bytes(s->tok, id, &lens[id]);
    enc_status st = grammar_vocab_new(bytes, lens, s->n_vocab, &s->vocab);
    free(bytes);
    free(lens);
    return st;
}

enc_status api_structured_wanted(const encore_request *r, int *wanted)
{
    int n = (r->json_schema != NULL) + (r->regex != NULL) + (r->grammar != NULL) +
            (r->n_choices > 0) + (r->json_object != 0) + (r->tool_calls != NULL);
    *wanted = n > 0;
    if (n > 1)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: at most one of json_schema, regex, grammar, choices, "
                        "json_object and tool_calls may be given");
    return ENC_OK;
}

/* The rules of r's constraint but a grammar's or tool calls' (malloc'ed),
 * root rule <prefix>root. */
static enc_status api__constraint_ebnf(const encore_request *r, const char *prefix, char **ebnf)
{
    enc_status st;
    if (r->json_schema)
        st = grammar_json_schema_to_ebnf(r->json_schema, strlen(r->json_schema), prefix, ebnf);
    else if (r->regex)
        st = grammar_regex_to_ebnf(r->regex, prefix, ebnf);
    else if (r->n_choices)
        st = grammar_choice_to_ebnf(r->choices, r->n_choices, prefix, ebnf);
    else
        return grammar_json_object_to_ebnf(prefix, ebnf);
    if (st != ENC_OK) {
        const char *field = r->json_schema ? "json_schema" : r->regex ? "regex" : "choices";
        return enc_fail_context(st, "request.%s", field);
    }
    return ENC_OK;
}

/* The EBNF text of r's constraint (malloc'ed), its root rule "root"; tool
 * calls in the syntax of tok's chat template; with think_first (and a
 * template with think blocks: Qwen3's, Thinking-2507's), the reasoning
 * before it:
 *
 *   root ::= think_root? c_root        (1)
 *   root ::= think_root c_root         (2: think_root without "<think>\n") */
static enc_status api__ebnf(const encore_request *req, const tokenizer *tok, char **ebnf)
{
    encore_request thinks = *req; /* a template without think blocks: no reasoning first */
    if (!chat_template_thinks(tok)) thinks.think_first = 0;
    const encore_request *r = &thinks;
    if (r->tool_calls) return api_tool_grammar_ebnf(r, chat_template_tool_format(tok), ebnf);
    if (r->grammar) {
        *ebnf = malloc(strlen(r->grammar) + 1);
        if (!*ebnf) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "structured outputs: out of memory");
        strcpy(*ebnf, r->grammar);
        return ENC_OK;
    }
    if (!r->think_first) return api__constraint_ebnf(r, "", ebnf);
    char *think = NULL, *text = NULL;
    enc_status st = grammar_think_to_ebnf(r->think_first == 2, "think_", &think);
    if (st == ENC_OK) st = api__constraint_ebnf(r, "c_", &text);
    ebnf_buf b = {0};
    if (st == ENC_OK) {
        ebnf_buf_printf(&b, "root ::= think_root%s c_root\n%s\n%s", r->think_first == 2 ? "" : "?",
                        think, text);
        st = ebnf_buf_finish(&b, ebnf);
    }
    free(think);
    free(text);
    return st;
}

/* The cached grammar of ebnf, compiled when absent (takes ebnf). Lock held. */
static enc_status api__grammar(api_structured *s, char *ebnf, int is_grammar_field,
                               api_grammar **out)
{
    for (int i = 0; i < API_GRAMMARS; i++)
        if (s->cache[i] && !strcmp(s->cache[i]->ebnf, ebnf)) {
            free(ebnf);
            s->cache[i]->used = ++s->clock;
            s->cache[i]->refs++;
            *out = s->cache[i];
            return ENC_OK;
        }
    int slot = 0; /* an empty slot, else the least recently used */
    for (int i = 0; i < API_GRAMMARS; i++) {
        if (!s->cache[i]) {
            slot = i;
            break;
        }
        if (s->cache[i]->used < s->cache[slot]->used) slot = i;
    }
    api_grammar *ag = calloc(1, sizeof *ag);
    if (!ag) {
        free(ebnf);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "structured outputs: out of memory");
    }
    enc_status st = grammar_compile(ebnf, strlen(ebnf), "root", &ag->g);
    if (st != ENC_OK) {
        free(ebnf);
        free(ag);
        return is_grammar_field ? enc_fail_context(st, "request.grammar") : st;
    }
    ag->ebnf = ebnf;
    ag->refs = 2; /* the cache and the caller */
    ag->used = ++s->clock;
    if (s->cache[slot]) api__grammar_unref(s->cache[slot]);
    s->cache[slot] = ag;
    *out = ag;
    return ENC_OK;
}

/* --- the engine's constraint ops (engine thread) ------------------------------- */

static void api__fill_mask(void *state, uint32_t *allowed, int32_t n_vocab)
{
    (void)n_vocab; /* the vocabulary was built with the model's n_vocab */
    api_matcher *am = state;
    if (grammar_matcher_fill_mask(am->m, allowed) != ENC_OK)
        memset(allowed, 0,
               ((size_t)n_vocab + 31) / 32 * sizeof *allowed); /* no token: the request ends */
}

static bool api__accept(void *state, int32_t id)
{
    api_matcher *am = state;
    return grammar_matcher_accept(am->m, id);
}

static void api__destroy(void *state)
{
    api_matcher *am = state;
    grammar_matcher_free(am->m);
    pthread_mutex_lock(&am->s->mu);
    api__grammar_unref(am->ag);
    pthread_mutex_unlock(&am->s->mu);
    free(am);
}

enc_status api_structured_constraint(api_structured *s, const encore_request *r,
                                     const int32_t *eos_ids, int n_eos, engine_constraint *out)
{
    memset(out, 0, sizeof *out);
    if (!s->tok)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: structured outputs need the model's tokenizer "
                        "(tokenizer.json)");
    char *ebnf = NULL;
    ENC_TRY(api__ebnf(r, s->tok, &ebnf));
    api_matcher *am = calloc(1, sizeof *am);
    if (!am) {
        free(ebnf);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "structured outputs: out of memory");
    }
    am->s = s;
    pthread_mutex_lock(&s->mu);
    enc_status st = api__vocab(s);
    if (st == ENC_OK)
        st = api__grammar(s, ebnf, r->grammar != NULL, &am->ag);
    else
        free(ebnf);
    int32_t end[32]; /* the model's EOS ids (unless ignore_eos) and the request's stop ids: what
                        ends it */
    int n_end = 0;
    if (st == ENC_OK) {
        for (int i = 0; i < n_eos && !r->sampling.ignore_eos && n_end < 16; i++)
            end[n_end++] = eos_ids[i];
        for (size_t i = 0; i < r->sampling.n_stop_token_ids && i < 16; i++)
            end[n_end++] = r->sampling.stop_token_ids[i];
        st = grammar_matcher_new(am->ag->g, s->vocab, end, n_end, &am->m);
        if (st != ENC_OK) api__grammar_unref(am->ag);
    }
    pthread_mutex_unlock(&s->mu);
    if (st != ENC_OK) {
        free(am);
        return st;
    }
    out->state = am;
    out->fill_mask = api__fill_mask;
    out->accept = api__accept;
    out->destroy = api__destroy;
    return ENC_OK;
}
