/* generation.c - a completion or chat request from its parsed body to the
 * engine and back: prompts, checks, admission, n submits per prompt, then
 * one JSON reply or a Server-Sent Events stream.
 *
 * Data flow, one job per HTTP request, one choice per submitted request (a
 * completions batch of P prompts is P x n choices, choice p * n + j the j-th
 * of prompt p, as OpenAI and vLLM number them):
 *
 *   HTTP thread                     engine thread
 *   gen_handle ── encore_submit ──► gen__on_output (copies the output into an
 *        │                              event, appends it to its choice, signals)
 *        ▼                                      │
 *   wait on job->cond ◄─────────────────────────┘
 *   take events, format: the whole reply (stream: false), or SSE chunks
 *   handed to libmicrohttpd by gen__stream_read (stream: true)
 *
 * A job is reference-counted: one reference for the HTTP side and one per
 * submitted choice, dropped by the engine's last call for it, so that
 * whichever side ends last frees it. A client that goes away (a failed write
 * ends the response; or, while nothing is written, its socket polled every
 * GEN_POLL_MS shows the hang-up) gets its requests cancelled.
 *
 * A stream that has sent nothing for its keep-alive interval, min(
 * GEN_KEEPALIVE_MAX_S, --timeout / 4) seconds (waiting in the queue, in a
 * long prefill, or preempted), sends the SSE comment ": keep-alive", which
 * clients skip: libmicrohttpd closes a connection silent for --timeout. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "openai_response.h"
#include "reasoning.h"
#include "responses_request.h"
#include "responses_stream.h"
#include "server_impl.h"
#include "tool_calls.h"
#include "tool_request.h"

enum { GEN_POLL_MS = 50, GEN_KEEPALIVE_MAX_S = 5 };

/* vLLM's prompt_logprobs of one prompt, as the engine gave them. */
typedef struct gen_prompt_lps {
    int32_t *ids;        /* [n] */
    float *logprobs;     /* [n], the first NAN */
    int32_t *ranks;      /* [n] */
    encore_logprob *top; /* [n * n_top] */
    int n_top;
    size_t n;
} gen_prompt_lps;

typedef struct gen_event {
    struct gen_event *next;
    int32_t *ids;          /* [n_ids] */
    size_t n_ids;
    float *logprobs;       /* [n_ids], NULL unless requested */
    encore_logprob *top;   /* [n_ids * n_top] */
    int n_top;
    char *text;            /* NUL-terminated */
    size_t text_len;
    int finished;
    char finish_reason[16];
    char *stop_string;     /* NULL when none */
    int32_t stop_token_id; /* -1 when none */
    size_t n_prompt, n_cached, n_output;
    size_t n_prompt_lps;        /* the first n_prompt_lps of ids and logprobs: an echoed prompt's */
    gen_prompt_lps *prompt_lps; /* prompt_logprobs asked: the prompt's, in its first event */
} gen_event;

struct gen_job;

typedef struct gen_choice {
    struct gen_job *job;
    int index;
    int64_t request_id;    /* -1 until submitted */
    int finished;          /* the engine's last call came (under job->mu) */
    gen_event *head, *tail; /* events the HTTP side has not taken (under job->mu) */
    gen_event *taken;       /* the HTTP side's: events gen__take detached, to apply */
    double t_last;         /* engine thread: when its last tokens came, 0 before any */
    /* the HTTP side's state */
    int done;              /* its last event is processed */
    char *text;            /* completions: echo + text so far; NUL-terminated */
    size_t n_text, n_text_sent;
    reasoning_split split; /* chat: reasoning and content so far */
    char *reasoning, *content;
    size_t n_reasoning, n_content, n_reasoning_sent, n_content_sent;
    int role_sent;
    /* chat with tools (tool_choice not "none"): the content goes through the
     * tool-call parser; raw is what reasoning_put gave since */
    int parse_tools;
    tool_parser tools;
    char *raw;
    size_t n_raw, n_calls_sent;
    size_t *call_marks;    /* [tools.n_calls]: n_content when each call was parsed */
    int32_t *ids;          /* [n_ids] the whole reply's logprobs (stream: false) */
    float *logprobs;
    encore_logprob *top;
    size_t n_ids, cap_ids;
    size_t text_offset;    /* completions logprobs: characters of token text so far */
    char finish_reason[16];
    char *stop_reason;
    int32_t stop_token_id; /* the stop id that ended it, else -1 (stop_reason when no string) */
    size_t n_output, n_cached;
    size_t n_prompt;    /* its prompt's tokens */
    double cum_logprob; /* of its generated tokens (best_of picks by it) */
    size_t n_reasoning_tokens; /* generated tokens up to the think block's end */
    gen_prompt_lps *prompt_lps; /* prompt_logprobs asked: its prompt's, once they came */
    size_t n_ids_delivered;     /* a streamed Response: tokens an output_text.delta carried
                                 * (or a call took) */
} gen_choice;

typedef struct gen_job {
    http_server *srv;
    pthread_mutex_t mu;
    pthread_cond_t cond;   /* an event arrived */
    int refs;
    int cancelled;
    oai_request req;
    oai_head head;
    char id[64];
    double t_arrival;
    char client[HTTP_CLIENT_ID_MAX]; /* http_client_id: its admission is given back to it */
    size_t n_prompt;                 /* the prompts' tokens, each prompt counted once */
    int fd;                /* the client's socket, -1 if unknown */
    double t_polled;       /* when gen__wait last looked at it */
    char *out;             /* SSE bytes not yet handed to libmicrohttpd */
    size_t out_len, out_cap, out_off;
    double t_out;          /* stream: when SSE bytes were last made (http_now) */
    double keepalive_s;    /* stream: silence before a ": keep-alive" comment */
    int out_done, oom;
    int error_sent;        /* stream: the SSE error event for an engine failure went out */
    int in_think;          /* chat: the prompt opened the think block (Thinking-2507) */
    int per_prompt;        /* candidates per prompt: req.best_of (req.n unless best_of > n) */
    resp_stream resp;      /* req.responses: the Response's items and events */
    int n;                 /* candidates: per_prompt per prompt */
    gen_choice choices[];  /* candidate i is of prompt i / per_prompt */
} gen_job;

/* --- the job ------------------------------------------------------------------ */

static void gen__prompt_lps_free(gen_prompt_lps *p)
{
    if (!p) return;
    free(p->ids);
    free(p->logprobs);
    free(p->ranks);
    free(p->top);
    free(p);
}

static void gen__event_free(gen_event *ev)
{
    if (!ev) return;
    gen__prompt_lps_free(ev->prompt_lps);
    free(ev->ids);
    free(ev->logprobs);
    free(ev->top);
    free(ev->text);
    free(ev->stop_string);
    free(ev);
}

static void gen__events_free(gen_event *ev)
{
    for (gen_event *next; ev; ev = next) {
        next = ev->next;
        gen__event_free(ev);
    }
}

/* A job of n_choices choices for req (taken: *req is left empty). */
static gen_job *gen__job_new(http_server *s, oai_request *req, int n_choices, int fd,
                             double t_arrival, const char *client)
{
    gen_job *j = calloc(1, sizeof *j + (size_t)n_choices * sizeof(gen_choice));
    if (!j) return NULL;
    http_cond_init(&j->cond);
    pthread_mutex_init(&j->mu, NULL);
    j->srv = s;
    j->refs = 1;
    j->req = *req; /* taken */
    memset(req, 0, sizeof *req);
    j->fd = fd;
    j->n = n_choices;
    j->per_prompt = j->req.best_of;
    j->t_arrival = t_arrival;
    snprintf(j->client, sizeof j->client, "%s", client);
    http_new_id(s,
                j->req.responses          ? "resp_"
                : j->req.kind == OAI_CHAT ? "chatcmpl-"
                                          : "cmpl-",
                j->id, sizeof j->id);
    j->head = (oai_head){.kind = j->req.kind, .id = j->id, .created = (int64_t)time(NULL),
                         .model = s->model_name, .usage_null = j->req.include_usage};
    resp_head rh = {.id = j->id,
                    .created_at = j->head.created,
                    .model = s->model_name,
                    .echo = j->req.responses_echo ? j->req.responses_echo : "",
                    .temperature = j->req.sampling.temperature,
                    .top_p = j->req.sampling.top_p};
    resp_stream_init(&j->resp, &rh);
    int in_think = 0, ok = 1;
    int xml = encore_chat_tool_format(s->engine) == ENCORE_TOOL_FORMAT_XML;
    if (j->req.kind == OAI_CHAT) {
        encore_chat_options o = tool_request_chat_options(&j->req, 0);
        in_think = encore_chat_opens_reasoning(s->engine, &o);
        j->in_think = in_think;
    }
    for (int i = 0; i < j->n; i++) {
        j->choices[i].job = j;
        j->choices[i].index = i;
        j->choices[i].request_id = -1;
        j->choices[i].stop_token_id = -1;
        reasoning_init(&j->choices[i].split, in_think);
        tool_parser_init(&j->choices[i].tools);
        j->choices[i].parse_tools = j->req.kind == OAI_CHAT && j->req.n_tools > 0 &&
                                    j->req.tool_choice != OAI_TOOL_NONE;
        if (j->choices[i].parse_tools && xml &&
            !tool_parser_set_format(&j->choices[i].tools, TOOL_FORMAT_XML, j->req.tools_json))
            ok = 0;
    }
    if (!ok) { /* out of memory: the request goes back to the caller */
        for (int i = 0; i < j->n; i++)
            tool_parser_free(&j->choices[i].tools);
        *req = j->req;
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cond);
        free(j);
        return NULL;
    }
    return j;
}

static void gen__job_free(gen_job *j)
{
    http_server *s = j->srv;
    for (int i = 0; i < j->n; i++) {
        gen_choice *c = &j->choices[i];
        gen__events_free(c->head);
        gen__events_free(c->taken);
        free(c->text);
        free(c->reasoning);
        free(c->content);
        free(c->raw);
        free(c->call_marks);
        tool_parser_free(&c->tools);
        free(c->ids);
        free(c->logprobs);
        free(c->top);
        free(c->stop_reason);
        gen__prompt_lps_free(c->prompt_lps);
    }
    oai_request_free(&j->req);
    resp_stream_free(&j->resp);
    free(j->out);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cond);
    int n = j->n;
    char client[HTTP_CLIENT_ID_MAX];
    memcpy(client, j->client, sizeof client);
    free(j);
    http_admit_release(s, client, n, 1);
}

static void gen__release(gen_job *j)
{
    pthread_mutex_lock(&j->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (last) gen__job_free(j);
}

/* Cancel every submitted choice that has not finished (the caller holds a
 * reference; encore_cancel is called without j->mu, which the engine
 * thread's callback takes). */
static void gen__cancel(gen_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->cancelled = 1;
    pthread_mutex_unlock(&j->mu);
    for (int i = 0; i < j->n; i++) {
        pthread_mutex_lock(&j->mu);
        int64_t id = j->choices[i].finished ? -1 : j->choices[i].request_id;
        pthread_mutex_unlock(&j->mu);
        if (id >= 0) encore_cancel(j->srv->engine, id);
    }
}

/* --- the engine side ------------------------------------------------------------- */

static void *gen__dup(const void *p, size_t n)
{
    if (!p || !n) return NULL;
    void *d = malloc(n);
    if (d) memcpy(d, p, n);
    return d;
}

/* a[0..na) then b[0..nb) (elements of `size` bytes) in one malloc'd
 * array; NULL when both are empty or out of memory. */
static void *gen__cat(const void *a, size_t na, const void *b, size_t nb, size_t size)
{
    if (!na && !nb) return NULL;
    char *p = malloc((na + nb) * size);
    if (p && na) memcpy(p, a, na * size);
    if (p && nb) memcpy(p + na * size, b, nb * size);
    return p;
}

/* n rows of `row` alternatives into dst from src's rows of src_row >= row. */
static void gen__top_rows(encore_logprob *dst, const encore_logprob *src, size_t n, size_t src_row,
                          size_t row)
{
    for (size_t i = 0; i < n; i++)
        memcpy(dst + i * row, src + i * src_row, row * sizeof *dst);
}

/* A copy of o's prompt records (vLLM's prompt_logprobs), k alternatives
 * each (the engine may have recorded more, for an echo); NULL when out of
 * memory. */
static gen_prompt_lps *gen__prompt_lps_new(const encore_output *o, int k)
{
    gen_prompt_lps *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    size_t n = o->n_prompt_logprobs, row = (size_t)(k < o->n_prompt_top ? k : o->n_prompt_top);
    p->n = n;
    p->n_top = (int)row;
    p->ids = gen__dup(o->prompt_ids, n * sizeof *p->ids);
    p->logprobs = gen__dup(o->prompt_logprobs, n * sizeof *p->logprobs);
    p->ranks = gen__dup(o->prompt_ranks, n * sizeof *p->ranks);
    p->top = row ? malloc(n * row * sizeof *p->top) : NULL;
    if (p->top) gen__top_rows(p->top, o->prompt_top, n, (size_t)o->n_prompt_top, row);
    if (!p->ids || !p->logprobs || !p->ranks || (row && !p->top)) {
        gen__prompt_lps_free(p);
        return NULL;
    }
    return p;
}

/* A copy of the output for j; NULL when out of memory. An echoed prompt's
 * logprobs (echo with logprobs: in the first output with ids, or alone in
 * the last of a max_tokens 0 request) come first, as tokens before the new
 * ones, with the generated tokens' alternatives; dropped when the new ones'
 * logprobs are missing (out of memory in the engine thread). With
 * prompt_logprobs the prompt's records are kept aside too. */
static gen_event *gen__event_new(const gen_job *j, const encore_output *o)
{
    gen_event *ev = calloc(1, sizeof *ev);
    if (!ev) return NULL;
    int echoed = j->req.echo && j->req.logprobs && o->prompt_logprobs;
    size_t np = echoed && (o->logprobs || !o->n_ids) ? o->n_prompt_logprobs : 0;
    size_t ng = o->logprobs ? o->n_ids : 0, n = np + o->n_ids;
    int has_lp = o->logprobs || np;
    ev->n_ids = n;
    ev->n_prompt_lps = np;
    ev->ids = gen__cat(o->prompt_ids, np, o->ids, o->n_ids, sizeof *o->ids);
    ev->logprobs =
        has_lp ? gen__cat(o->prompt_logprobs, np, o->logprobs, ng, sizeof *o->logprobs) : NULL;
    ev->n_top = has_lp ? j->req.top_logprobs : 0;
    size_t row = (size_t)ev->n_top;
    ev->top = row && n ? malloc(n * row * sizeof *ev->top) : NULL;
    if (ev->top && np) gen__top_rows(ev->top, o->prompt_top, np, (size_t)o->n_prompt_top, row);
    if (ev->top && ng) gen__top_rows(ev->top + np * row, o->top, ng, (size_t)o->n_top, row);
    ev->text = malloc(o->text_len + 1);
    ev->finished = o->finished;
    snprintf(ev->finish_reason, sizeof ev->finish_reason, "%s",
             o->finish_reason ? o->finish_reason : "stop");
    ev->stop_string = o->stop_string ? gen__dup(o->stop_string, strlen(o->stop_string) + 1) : NULL;
    ev->stop_token_id = o->stop_token_id;
    ev->n_prompt = o->n_prompt_tokens;
    ev->n_cached = o->n_cached_prompt_tokens;
    ev->n_output = o->n_output_tokens;
    int kept = j->req.prompt_logprobs >= 0 && o->prompt_logprobs;
    if (kept) ev->prompt_lps = gen__prompt_lps_new(o, j->req.prompt_logprobs);
    if (!ev->text || (n && !ev->ids) || (has_lp && n && !ev->logprobs) || (row && n && !ev->top) ||
        (o->stop_string && !ev->stop_string) || (kept && !ev->prompt_lps)) {
        gen__event_free(ev);
        return NULL;
    }
    if (o->text_len) memcpy(ev->text, o->text, o->text_len);
    ev->text[o->text_len] = '\0';
    ev->text_len = o->text_len;
    return ev;
}

/* ENCORE_FAULT_FINAL_COPIES (tests): 1 while the first N copies of a
 * request's last output are to fail as out of memory would. */
static int gen__fault(http_server *s)
{
    if (atomic_load(&s->n_fault_final_copies) <= 0) return 0;
    return atomic_fetch_sub(&s->n_fault_final_copies, 1) > 0;
}

/* The encore_output callback, on the engine thread: copy, append, signal. */
static void gen__on_output(void *user, const encore_output *o)
{
    gen_choice *c = user;
    gen_job *j = c->job;
    metrics *m = &j->srv->metrics;
    double now = http_now();
    if (o->n_ids) {
        if (c->t_last == 0)
            metrics_observe_ttft(m, now - j->t_arrival);
        else
            metrics_observe_itl(m, now - c->t_last, (int64_t)o->n_ids);
        c->t_last = now;
    }
    if (o->finished) metrics_observe_finish(m, o->finish_reason, now - j->t_arrival);
    gen_event *ev = o->finished && gen__fault(j->srv) ? NULL : gen__event_new(j, o);
    pthread_mutex_lock(&j->mu);
    if (!ev) {
        j->oom = 1; /* the reply ends with a server error */
    } else if (c->tail) {
        c->tail->next = ev;
        c->tail = ev;
    } else {
        c->head = c->tail = ev;
    }
    int last = 0;
    if (o->finished && !c->finished) {
        c->finished = 1;
        last = --j->refs == 0;
    }
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->mu);
    if (last) gen__job_free(j);
}

/* --- the HTTP side: taking events ------------------------------------------------- */

static int gen__append(char **s, size_t *n, const char *text, size_t len)
{
    char *p = realloc(*s, *n + len + 1);
    if (!p) return 0;
    if (len) memcpy(p + *n, text, len);
    *n += len;
    p[*n] = '\0';
    *s = p;
    return 1;
}

static size_t gen__token_text(void *user, int32_t id, char *buf, size_t cap)
{
    http_server *s = user;
    char *text = NULL;
    size_t len = 0;
    if (encore_detokenize(s->engine, &id, 1, 0, &text, &len) != ENCORE_OK) return 0;
    if (len > cap) len = cap;
    memcpy(buf, text, len);
    encore_free(text);
    return len;
}

/* Keep an event's logprobs for the whole reply. */
static int gen__keep_logprobs(gen_choice *c, const gen_event *ev)
{
    if (!ev->logprobs || !ev->n_ids) return 1;
    size_t need = c->n_ids + ev->n_ids;
    int n_top = c->job->req.top_logprobs;
    if (need > c->cap_ids) {
        size_t cap = need * 2;
        int32_t *ids = realloc(c->ids, cap * sizeof *ids);
        if (ids) c->ids = ids;
        float *lps = realloc(c->logprobs, cap * sizeof *lps);
        if (lps) c->logprobs = lps;
        encore_logprob *top = realloc(c->top, (cap * (size_t)n_top + 1) * sizeof *top);
        if (top) c->top = top;
        if (!ids || !lps || !top) return 0;
        c->cap_ids = cap;
    }
    memcpy(c->ids + c->n_ids, ev->ids, ev->n_ids * sizeof *ev->ids);
    memcpy(c->logprobs + c->n_ids, ev->logprobs, ev->n_ids * sizeof *ev->logprobs);
    for (size_t i = 0; i < ev->n_ids; i++)
        for (int k = 0; k < n_top; k++) {
            encore_logprob lp = {0, -9999.0f};
            if (k < ev->n_top) lp = ev->top[i * (size_t)ev->n_top + (size_t)k];
            c->top[(c->n_ids + i) * (size_t)n_top + (size_t)k] = lp;
        }
    c->n_ids = need;
    return 1;
}

/* The generated tokens of ev that belong to the think block, added to
 * c->n_reasoning_tokens (before ev is applied): all of them while the block
 * stays open after ev, else those up to the one whose text closes it. */
static void gen__count_reasoning(gen_choice *c, const gen_event *ev)
{
    reasoning_state was = c->split.state;
    /* only a Response reports them */
    if (!c->job->req.responses || was == REASONING_CONTENT || !ev->n_ids) return;
    /* a reply thinks when it begins with the tag (reasoning_put's rule) */
    if (was == REASONING_START && strncmp(ev->text, "<think>", 7)) return;
    size_t first = ev->n_prompt_lps, at = first;
    const char *end = strstr(ev->text, "</think>");
    if (!end) {
        c->n_reasoning_tokens += ev->n_ids - first;
        return;
    }
    /* the token whose text reaches past the tag's start */
    size_t upto = (size_t)(end - ev->text) + strlen("</think>"), len = 0;
    char piece[256];
    while (at < ev->n_ids && len < upto) {
        size_t n = gen__token_text(c->job->srv, ev->ids[at++], piece, sizeof piece);
        len += n < sizeof piece ? n : sizeof piece;
    }
    c->n_reasoning_tokens += at - first;
}

/* The chat text of one event: reasoning and content, and with tools the
 * calls out of the content (each new one given its id). */
static int gen__apply_chat(gen_choice *c, const gen_event *ev)
{
    gen__count_reasoning(c, ev);
    if (!c->parse_tools)
        return reasoning_put(&c->split, ev->text, ev->text_len, ev->finished, &c->reasoning,
                             &c->n_reasoning, &c->content, &c->n_content);
    size_t n_calls = c->tools.n_calls;
    c->n_raw = 0;
    int ok = reasoning_put(&c->split, ev->text, ev->text_len, ev->finished, &c->reasoning,
                           &c->n_reasoning, &c->raw, &c->n_raw) &&
             tool_parser_put(&c->tools, c->raw, c->n_raw, ev->finished, &c->content,
                             &c->n_content);
    if (c->tools.n_calls > n_calls) {
        size_t *marks = realloc(c->call_marks, c->tools.n_calls * sizeof *marks);
        if (!marks) return 0;
        c->call_marks = marks;
    }
    for (size_t k = n_calls; k < c->tools.n_calls; k++) {
        http_new_id(c->job->srv, "call_", c->tools.calls[k].id, sizeof c->tools.calls[k].id);
        c->call_marks[k] = c->n_content;
    }
    return ok;
}

/* Fold one event into its choice's text (split into reasoning and content for
 * chat) and finish state; a chat reply that stopped after making calls
 * finishes with "tool_calls", but under a named tool_choice with "stop", as
 * OpenAI and vLLM answer it. One cut short by max_tokens stays "length",
 * but for calls the model chose to make (tool_choice "auto"), as vLLM
 * answers it ("tool_calls" whenever its parser found a call); a Response
 * says "incomplete" either way. */
static int gen__apply(gen_choice *c, const gen_event *ev)
{
    gen_job *j = c->job;
    int ok = 1;
    if (j->req.kind == OAI_CHAT)
        ok = gen__apply_chat(c, ev);
    else
        ok = gen__append(&c->text, &c->n_text, ev->text, ev->text_len);
    if (ok && (!j->req.stream || j->req.responses)) ok = gen__keep_logprobs(c, ev);
    for (size_t k = ev->n_prompt_lps; ev->logprobs && k < ev->n_ids; k++)
        c->cum_logprob += ev->logprobs[k];
    if (ev->finished) {
        c->done = 1;
        snprintf(c->finish_reason, sizeof c->finish_reason, "%s", ev->finish_reason);
        int cut = !strcmp(ev->finish_reason, "length");
        if (c->tools.n_calls &&
            (!strcmp(ev->finish_reason, "stop") ||
             (cut && j->req.tool_choice == OAI_TOOL_AUTO && !j->req.responses)) &&
            j->req.tool_choice != OAI_TOOL_NAMED)
            snprintf(c->finish_reason, sizeof c->finish_reason, "tool_calls");
        if (ev->stop_string) c->stop_reason = gen__dup(ev->stop_string, strlen(ev->stop_string) + 1);
        c->stop_token_id = ev->stop_token_id;
        c->n_output = ev->n_output;
        c->n_cached = ev->n_cached;
    }
    return ok;
}

static void gen__sse_event(gen_job *j, gen_choice *c, const gen_event *ev);

/* Apply the events each choice has taken, choice by choice; with stream,
 * each also makes its chunks. 0 when out of memory. */
static int gen__apply_taken(gen_job *j)
{
    int ok = 1;
    for (int i = 0; i < j->n; i++) {
        gen_choice *c = &j->choices[i];
        for (gen_event *ev = c->taken, *next; ev; ev = next) {
            next = ev->next;
            if (ev->prompt_lps && !c->prompt_lps) { /* the choice keeps them */
                c->prompt_lps = ev->prompt_lps;
                ev->prompt_lps = NULL;
            }
            ok &= gen__apply(c, ev);
            /* the records came with its first ids: without them, memory ran out */
            if (ev->finished && j->req.prompt_logprobs >= 0 && !c->prompt_lps &&
                (!strcmp(ev->finish_reason, "stop") || !strcmp(ev->finish_reason, "length")))
                ok = 0;
            if (j->req.stream) gen__sse_event(j, c, ev);
            gen__event_free(ev);
        }
        c->taken = NULL;
    }
    return ok;
}

static int gen__all_done(const gen_job *j)
{
    for (int i = 0; i < j->n; i++)
        if (!j->choices[i].done) return 0;
    return 1;
}

/* Detach every choice's pending events into its `taken` (j->mu held; the
 * HTTP side applies and frees them before it takes again). */
static int gen__take(gen_job *j)
{
    int any = 0;
    for (int i = 0; i < j->n; i++) {
        gen_choice *c = &j->choices[i];
        c->taken = c->head;
        any |= c->head != NULL;
        c->head = c->tail = NULL;
    }
    return any;
}

/* 0 when the client went away or the server stops; the socket is looked at
 * once per GEN_POLL_MS at most. */
static int gen__alive(gen_job *j)
{
    double now = http_now();
    if (now - j->t_polled < GEN_POLL_MS * 1e-3) return 1;
    j->t_polled = now;
    return !atomic_load(&j->srv->stopping) && !http_client_gone(j->fd);
}

/* Wait for events, at most GEN_POLL_MS (j->mu held); then gen__alive. */
static int gen__wait(gen_job *j)
{
    http_cond_wait_ms(&j->cond, &j->mu, GEN_POLL_MS);
    return gen__alive(j);
}

/* Every prompt's tokens once, every candidate's completion tokens (best_of's
 * unshown ones too, as OpenAI bills them); the cached tokens of each
 * prompt's first candidate. */
static oai_usage gen__usage(const gen_job *j)
{
    oai_usage u = {.prompt_tokens = (int64_t)j->n_prompt};
    for (int i = 0; i < j->n; i++) {
        u.completion_tokens += (int64_t)j->choices[i].n_output;
        u.reasoning_tokens += (int64_t)j->choices[i].n_reasoning_tokens;
        if (i % j->per_prompt == 0) u.cached_tokens += (int64_t)j->choices[i].n_cached;
    }
    return u;
}

/* --- stream: false ------------------------------------------------------------------- */

/* A choice the engine ended with "error" (a failed step, see encore.h): the
 * whole request gets 500 (a stream, an SSE error event). */
static void gen__engine_error(oai_error *err)
{
    oai_error_set(err, 500, NULL,
                  "generation failed in the engine (a step, adding the request or decoding its "
                  "text failed; the server's log says which)");
}

static int gen__any_error(const gen_job *j)
{
    for (int i = 0; i < j->n; i++)
        if (!strcmp(j->choices[i].finish_reason, "error")) return 1;
    return 0;
}

/* The calls of choice c a reply shows: all, or with parallel_tool_calls
 * false the first only (vLLM's). */
static size_t gen__calls_shown(const gen_choice *c)
{
    size_t n = c->tools.n_calls;
    return !c->job->req.parallel_tool_calls && n > 1 ? 1 : n;
}

/* A reply's calls into ch (*calls malloc'd, the caller frees it); content
 * null when the calls are all there is, as OpenAI's. 0 when out of memory. */
static int gen__tool_calls_whole(const gen_choice *c, oai_choice *ch, oai_tool_call **calls)
{
    size_t n = gen__calls_shown(c);
    if (!n) return 1;
    *calls = malloc(n * sizeof **calls);
    if (!*calls) return 0;
    for (size_t k = 0; k < n; k++) {
        const tool_call *t = &c->tools.calls[k];
        (*calls)[k] = (oai_tool_call){(int)k, t->id, t->name, t->arguments};
    }
    ch->tool_calls = *calls;
    ch->n_tool_calls = n;
    if (!c->n_content) ch->text = NULL;
    return 1;
}

/* The candidates the reply shows, in its order, into shown[prompts x n]:
 * each prompt's, or with best_of above n its n with the highest cumulative
 * logprob of their generated tokens, highest first (ties: the lower index),
 * as OpenAI and vLLM pick them. */
static void gen__shown(const gen_job *j, int *shown)
{
    int per = j->per_prompt, n = j->req.n;
    if (per == n) { /* every candidate, in index order */
        for (int i = 0; i < j->n; i++)
            shown[i] = i;
        return;
    }
    for (int p = 0; p < j->n / per; p++) {
        int order[OAI_MAX_N];
        for (int k = 0; k < per; k++) { /* insertion sort: stable */
            int i = p * per + k, at = k;
            while (at > 0 && j->choices[order[at - 1]].cum_logprob < j->choices[i].cum_logprob) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = i;
        }
        memcpy(shown + p * n, order, (size_t)n * sizeof *shown);
    }
}

/* n tokens' logprobs (top: the request's top_logprobs alternatives each)
 * as the reply writes them. */
static oai_logprobs gen__logprobs_view(const gen_job *j, const int32_t *ids, const float *logprobs,
                                       const encore_logprob *top, size_t n)
{
    return (oai_logprobs){.ids = ids,
                          .logprobs = logprobs,
                          .top = top,
                          .n = n,
                          .n_top = j->req.top_logprobs,
                          .as_ids = j->req.tokens_as_ids,
                          .token_text = gen__token_text,
                          .user = j->srv};
}

/* The whole reply's JSON: the choices shown (gen__shown) in index order
 * and the usage; NULL when out of memory. */
static char *gen__body(gen_job *j)
{
    size_t n = (size_t)(j->n / j->per_prompt * j->req.n);
    oai_choice *choices = calloc(n, sizeof *choices);
    oai_logprobs *lps = calloc(n, sizeof *lps);
    oai_tool_call **calls = calloc(n, sizeof *calls);
    oai_prompt_logprobs *plps = calloc(n, sizeof *plps);
    int *shown = calloc(n, sizeof *shown);
    int ok = choices && lps && calls && plps && shown, chat = j->req.kind == OAI_CHAT;
    if (ok) gen__shown(j, shown);
    for (size_t i = 0; ok && i < n; i++) {
        gen_choice *c = &j->choices[shown[i]];
        lps[i] = gen__logprobs_view(j, c->ids, c->logprobs, c->top, c->n_ids);
        choices[i] = (oai_choice){
            .text = chat ? (c->content ? c->content : "") : (c->text ? c->text : ""),
            .reasoning =
                chat && j->req.include_reasoning ? c->reasoning : NULL, /* NULL unless
                                                                          the model thought */
            .finish_reason = c->finish_reason,
            .stop_reason = c->stop_reason,
            .stop_token_id = c->stop_token_id >= 0 ? &c->stop_token_id : NULL,
            .lp = j->req.logprobs ? &lps[i] : NULL,
            .has_prompt_lp = j->req.prompt_logprobs >= 0,
        };
        const gen_prompt_lps *p = c->prompt_lps;
        if (p) {
            plps[i] = (oai_prompt_logprobs){.ids = p->ids,
                                            .logprobs = p->logprobs,
                                            .ranks = p->ranks,
                                            .top = p->top,
                                            .n = p->n,
                                            .n_top = p->n_top,
                                            .token_text = gen__token_text,
                                            .user = j->srv};
            choices[i].prompt_lp = &plps[i];
        }
        ok = gen__tool_calls_whole(c, &choices[i], &calls[i]);
    }
    oai_usage u = gen__usage(j);
    char *body = ok ? oai_response_body(&j->head, choices, (int)n, &u) : NULL;
    for (size_t i = 0; calls && i < n; i++)
        free(calls[i]);
    free(choices);
    free(lps);
    free(calls);
    free(plps);
    free(shown);
    return body;
}

/* A Responses request's reply so far (its one choice): the reasoning
 * unless include_reasoning is false, the content, the calls shown; with
 * include's logprobs, *whole over every token kept so far and, for a
 * stream's next text delta, *delta over the content tokens no delta
 * carried yet (those of text held back included; the think block's not). */
static resp_progress gen__progress(const gen_choice *c, oai_logprobs *whole, oai_logprobs *delta)
{
    const gen_job *j = c->job;
    int thinking = j->req.include_reasoning;
    resp_progress p = {.reasoning = thinking ? c->reasoning : NULL,
                       .n_reasoning = thinking ? c->n_reasoning : 0,
                       .content = c->content,
                       .n_content = c->n_content,
                       .calls = c->tools.calls,
                       .n_calls = gen__calls_shown(c)};
    if (!j->req.logprobs) return p;
    *whole = gen__logprobs_view(j, c->ids, c->logprobs, c->top, c->n_ids);
    p.lp = whole;
    if (delta) {
        size_t from =
            c->n_ids_delivered > c->n_reasoning_tokens ? c->n_ids_delivered : c->n_reasoning_tokens;
        from = from < c->n_ids ? from : c->n_ids;
        size_t row = (size_t)j->req.top_logprobs;
        *delta = c->n_ids > from ? gen__logprobs_view(j, c->ids + from, c->logprobs + from,
                                                      c->top + from * row, c->n_ids - from)
                                 : gen__logprobs_view(j, NULL, NULL, NULL, 0);
        p.delta_lp = delta;
    }
    return p;
}

/* The whole Response; NULL when out of memory. */
static char *gen__response_body(gen_job *j)
{
    const gen_choice *c = &j->choices[0];
    oai_logprobs whole;
    resp_progress p = gen__progress(c, &whole, NULL);
    oai_usage u = gen__usage(j);
    return resp_whole(&j->resp.head, &p, c->call_marks, c->finish_reason, &u);
}

static enum MHD_Result gen__reply_whole(gen_job *j, struct MHD_Connection *conn)
{
    int gone = 0, ok = 1;
    pthread_mutex_lock(&j->mu);
    /* an event lost for lack of memory (j->oom) may be a choice's last: stop
     * waiting for it */
    while (!gen__all_done(j) && !gone && !j->oom) {
        if (!gen__take(j)) {
            gone = !gen__wait(j);
            continue;
        }
        pthread_mutex_unlock(&j->mu);
        ok &= gen__apply_taken(j);
        pthread_mutex_lock(&j->mu);
        gone = !gen__alive(j); /* also while tokens keep coming */
    }
    ok &= !j->oom;
    pthread_mutex_unlock(&j->mu);
    if (!ok) gen__cancel(j); /* the reply is a 500: end what still runs */
    if (gone) {
        gen__cancel(j);
        gen__release(j);
        return MHD_NO; /* nobody to answer */
    }
    int failed = gen__any_error(j);
    char *body = !ok || failed ? NULL : j->req.responses ? gen__response_body(j) : gen__body(j);
    enum MHD_Result r;
    if (body) {
        r = http_reply_json(conn, MHD_HTTP_OK, body);
    } else if (failed) {
        oai_error err;
        gen__engine_error(&err);
        r = http_reply_error(j->srv, conn, &err);
    } else {
        oai_error err;
        oai_error_set(&err, 500, NULL, "out of memory while building the reply");
        r = http_reply_error(j->srv, conn, &err);
    }
    gen__release(j);
    return r;
}

/* --- stream: true ---------------------------------------------------------------------- */

static void gen__out(gen_job *j, const char *s, size_t n)
{
    if (j->oom) return;
    if (j->out_len + n > j->out_cap) {
        size_t cap = (j->out_len + n) * 2 + 256;
        char *p = realloc(j->out, cap);
        if (!p) {
            j->oom = 1;
            return;
        }
        j->out = p;
        j->out_cap = cap;
    }
    memcpy(j->out + j->out_len, s, n);
    j->out_len += n;
}

/* "data: JSON\n\n" (json taken). */
static void gen__sse(gen_job *j, char *json)
{
    if (!json) {
        j->oom = 1;
        return;
    }
    gen__out(j, "data: ", 6);
    gen__out(j, json, strlen(json));
    gen__out(j, "\n\n", 2);
    free(json);
}

/* A named event, "event: TYPE\ndata: JSON\n\n" (json taken): each of a
 * Response stream's, and the error event of every stream. */
static void gen__sse_named(void *user, const char *type, char *json)
{
    gen_job *j = user;
    if (!json) {
        j->oom = 1;
        return;
    }
    gen__out(j, "event: ", 7);
    gen__out(j, type, strlen(type));
    gen__out(j, "\n", 1);
    gen__sse(j, json);
}

/* "event: error\ndata: {error}\n\n", once per stream, for a choice the
 * engine ended with "error". */
static void gen__sse_error(gen_job *j)
{
    if (j->error_sent) return;
    j->error_sent = 1;
    oai_error err;
    gen__engine_error(&err);
    metrics_count_error(&j->srv->metrics);
    /* a Response stream's: flat and numbered */
    gen__sse_named(j, "error",
                   j->req.responses ? resp_error_event(j->resp.seq++, &err)
                                    : oai_response_error(&err));
}

/* The calls choice c made since the last chunk: for each, one chunk with its
 * index, id, type and name (arguments ""), then one with its arguments (a
 * call is parsed whole before it is sent, so that one that does not parse
 * can still go out as content); u: the chunks' usage, or NULL. */
static void gen__sse_tool_calls(gen_job *j, gen_choice *c, const oai_usage *u)
{
    for (; c->n_calls_sent < c->tools.n_calls; c->n_calls_sent++) {
        if (c->n_calls_sent >= gen__calls_shown(c)) continue; /* parallel_tool_calls false */
        const tool_call *t = &c->tools.calls[c->n_calls_sent];
        oai_tool_call call = {(int)c->n_calls_sent, t->id, t->name, t->arguments};
        gen__sse(j, oai_response_tool_call_chunk(&j->head, c->index, &call, 0, u));
        gen__sse(j, oai_response_tool_call_chunk(&j->head, c->index, &call, 1, u));
    }
}

/* The Responses events for what one event added to the reply. */
static void gen__resp_event(gen_job *j, gen_choice *c, const gen_event *ev)
{
    oai_logprobs whole, delta;
    resp_progress p = gen__progress(c, &whole, &delta);
    size_t content = j->resp.n_content, calls = j->resp.n_calls;
    if (ev->finished) {
        oai_usage u = gen__usage(j);
        resp_stream_end(&j->resp, &p, c->finish_reason, &u, gen__sse_named, j);
    } else {
        resp_stream_update(&j->resp, &p, gen__sse_named, j);
    }
    if (j->resp.n_content != content || j->resp.n_calls != calls) /* a text delta or a call */
        c->n_ids_delivered = c->n_ids;
    if (j->resp.oom) j->oom = 1;
}

/* The chunk for what one event added to choice c; with
 * continuous_usage_stats each carries the choice's usage so far (the role
 * chunk's with no completion tokens, as vLLM's). */
static void gen__sse_event(gen_job *j, gen_choice *c, const gen_event *ev)
{
    char *content = NULL, *reasoning = NULL;
    if (ev->finished && !strcmp(c->finish_reason, "error")) {
        gen__sse_error(j);
        return;
    }
    if (j->req.responses) {
        gen__resp_event(j, c, ev);
        return;
    }
    int chat = j->req.kind == OAI_CHAT;
    oai_usage usage = {.prompt_tokens = (int64_t)c->n_prompt,
                       .cached_tokens = (int64_t)ev->n_cached};
    const oai_usage *u = j->req.continuous_usage ? &usage : NULL;
    if (chat && !c->role_sent) {
        c->role_sent = 1;
        oai_choice role = {.text = "", .role = 1, .usage = u};
        gen__sse(j, oai_response_chunk(&j->head, c->index, &role));
    }
    usage.completion_tokens = (int64_t)ev->n_output;
    /* the new text: from where the last chunk stopped */
    if (chat) {
        if (c->n_content > c->n_content_sent) content = c->content + c->n_content_sent;
        if (c->n_reasoning > c->n_reasoning_sent && j->req.include_reasoning)
            reasoning = c->reasoning + c->n_reasoning_sent;
    } else if (c->n_text > c->n_text_sent) {
        content = c->text + c->n_text_sent;
    }
    oai_logprobs lp = {.ids = ev->ids,
                       .logprobs = ev->logprobs,
                       .top = ev->top,
                       .n = ev->n_ids,
                       .n_top = ev->n_top < j->req.top_logprobs ? ev->n_top : j->req.top_logprobs,
                       .text_offset = c->text_offset,
                       .as_ids = j->req.tokens_as_ids,
                       .token_text = gen__token_text,
                       .user = j->srv};
    int has_lp = j->req.logprobs && ev->logprobs && ev->n_ids;
    int new_calls = c->tools.n_calls > c->n_calls_sent;
    if (!content && !reasoning && !has_lp && !ev->finished && !new_calls) return;
    oai_choice ch = {
        .text = content ? content : (chat ? NULL : ""),
        .reasoning = reasoning,
        .lp = has_lp ? &lp : NULL,
        .usage = u,
    };
    if (new_calls) { /* the text first, then the calls, then the finish */
        if (content || reasoning || has_lp) gen__sse(j, oai_response_chunk(&j->head, c->index, &ch));
        gen__sse_tool_calls(j, c, u);
        ch = (oai_choice){.usage = u};
    }
    if (!new_calls || ev->finished) {
        ch.finish_reason = ev->finished ? c->finish_reason : NULL;
        ch.stop_reason = ev->finished ? c->stop_reason : NULL;
        ch.stop_token_id = ev->finished && c->stop_token_id >= 0 ? &c->stop_token_id : NULL;
        gen__sse(j, oai_response_chunk(&j->head, c->index, &ch));
    }
    if (has_lp && j->req.kind == OAI_COMPLETION) c->text_offset += oai_logprobs_chars(&lp);
    c->n_content_sent = c->n_content;
    c->n_reasoning_sent = c->n_reasoning;
    c->n_text_sent = c->n_text;
}

/* Make more SSE bytes: take events, or wait for them. Returns 0 when the
 * client went away or the server stops. */
static int gen__stream_fill(gen_job *j)
{
    pthread_mutex_lock(&j->mu);
    int any = gen__take(j);
    int alive = any || gen__wait(j);
    pthread_mutex_unlock(&j->mu);
    if (!alive) return 0;
    if (!gen__apply_taken(j)) j->oom = 1;
    double now = http_now();
    if (j->out_len > 0) {
        j->t_out = now;
    } else if (now - j->t_out >= j->keepalive_s) {
        gen__out(j, ": keep-alive\n\n", 14);
        j->t_out = now;
    }
    if (gen__all_done(j)) {
        if (j->req.include_usage) {
            oai_usage u = gen__usage(j);
            gen__sse(j, oai_response_usage_chunk(&j->head, &u));
        }
        if (!j->req.responses)
            gen__out(j, "data: [DONE]\n\n", 14); /* a Response's ends
                                                      with its last event */
        j->out_done = 1;
    }
    return !j->oom;
}

static ssize_t gen__stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    gen_job *j = cls;
    (void)pos;
    while (j->out_off == j->out_len) {
        if (j->out_done) return MHD_CONTENT_READER_END_OF_STREAM;
        j->out_off = j->out_len = 0;
        if (!gen__stream_fill(j)) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = j->out_len - j->out_off;
    if (n > max) n = max;
    memcpy(buf, j->out + j->out_off, n);
    j->out_off += n;
    return (ssize_t)n;
}

/* The response is gone: done, or the client went away (then cancel). */
static void gen__stream_free(void *cls)
{
    gen_job *j = cls;
    if (!gen__all_done(j)) gen__cancel(j);
    gen__release(j);
}

static enum MHD_Result gen__reply_stream(gen_job *j, struct MHD_Connection *conn)
{
    j->t_out = http_now();
    if (j->req.responses) resp_stream_begin(&j->resp, gen__sse_named, j);
    j->keepalive_s = j->srv->cfg.timeout_s / 4.0;
    if (j->keepalive_s > GEN_KEEPALIVE_MAX_S) j->keepalive_s = GEN_KEEPALIVE_MAX_S;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, gen__stream_read, j,
                                          gen__stream_free);
    if (!r) {
        gen__cancel(j);
        gen__release(j);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r); /* the connection holds it; gen__stream_free runs at its end */
    return ret;
}

/* --- the request ------------------------------------------------------------------------ */

/* One prompt of the request, ready to submit: chat's conversation or one of
 * completions' prompts as token ids, and the max_tokens its choices get. */
typedef struct gen_prompt {
    int32_t *ids; /* [n_ids], malloc'd */
    size_t n_ids;
    int64_t max_tokens; /* as asked, or what max_model_len leaves after the prompt */
    int truncated;      /* truncate_prompt_tokens cut its beginning off */
} gen_prompt;

static void gen__prompts_free(gen_prompt *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++)
        free(p[i].ids);
    free(p);
}

static int gen__ids_copy(const int32_t *ids, size_t n, gen_prompt *out, oai_error *err)
{
    out->ids = malloc((n + 1) * sizeof *out->ids);
    if (!out->ids) return oai_error_set(err, 500, NULL, "out of memory");
    if (n) memcpy(out->ids, ids, n * sizeof *ids);
    out->n_ids = n;
    return 1;
}

/* The token ids of completions' prompt p, or of chat's conversation (p NULL). */
static int gen__prompt_ids(http_server *s, const oai_request *req, const oai_prompt *p,
                           gen_prompt *out, oai_error *err)
{
    if (p && !p->text) return gen__ids_copy(p->ids, p->n_ids, out, err);
    int32_t *tok = NULL;
    size_t n = 0;
    encore_status st;
    if (p) {
        st = encore_tokenize_special(s->engine, p->text, strlen(p->text), req->add_special_tokens,
                                     &tok, &n);
    } else if (!s->has_chat_template) {
        return oai_error_set(err, 400, "messages",
                             "this model has no chat template encore can render (start "
                             "the server with --chat-template FILE|NAME); use "
                             "/v1/completions");
    } else {
        encore_chat_options o = tool_request_chat_options(req, s->cfg.plain_content);
        st = encore_chat_tokenize_opts(s->engine, req->messages, req->n_messages, &o, &tok, &n);
    }
    if (st != ENCORE_OK) {
        http_error_from_encore(err, st,
                               p ? "cannot tokenize the prompt" : "cannot apply the chat template");
        return 0;
    }
    int ok = gen__ids_copy(tok, n, out, err);
    encore_free(tok);
    return ok;
}

/* truncate_prompt_tokens: the tokens each prompt keeps, its last ones (0:
 * all). As in vLLM, k may not exceed what max_model_len leaves beside
 * max_tokens (400 naming it), and -1 keeps that many (with max_tokens not
 * given, room for one token); when max_tokens leaves nothing, nothing is
 * cut and the prompt's check says why. */
static int gen__truncation(const http_server *s, const oai_request *req, int64_t *keep,
                           oai_error *err)
{
    int64_t k = req->truncate_prompt_tokens, room = s->max_model_len - req->max_tokens;
    *keep = 0;
    if (k == -1) {
        *keep = req->max_tokens || req->prompt_only ? room : room - 1;
        if (*keep < 1) *keep = 0;
    } else if (k > 0 && k > room) {
        return oai_error_set(err, 400, "truncate_prompt_tokens",
                             "'truncate_prompt_tokens' (%lld) is more than max_model_len (%lld) "
                             "- max_tokens (%lld) = %lld tokens; ask for a smaller truncation",
                             (long long)k, (long long)s->max_model_len, (long long)req->max_tokens,
                             (long long)room);
    } else {
        *keep = k;
    }
    return 1;
}

/* Every prompt as token ids: chat's one conversation, or each of
 * completions' prompts, each cut to its last truncate_prompt_tokens.
 * *out [*n] is the caller's (gen__prompts_free), also on failure. */
static int gen__prompts(http_server *s, const oai_request *req, gen_prompt **out, size_t *n,
                        oai_error *err)
{
    size_t count = req->kind == OAI_CHAT ? 1 : req->n_prompts;
    int64_t keep = 0;
    *out = calloc(count, sizeof **out);
    if (!*out) return oai_error_set(err, 500, NULL, "out of memory");
    *n = count;
    if (!gen__truncation(s, req, &keep, err)) return 0;
    for (size_t i = 0; i < count; i++) {
        const oai_prompt *p = req->kind == OAI_CHAT ? NULL : &req->prompts[i];
        gen_prompt *g = &(*out)[i];
        if (!gen__prompt_ids(s, req, p, g, err)) return 0;
        if (keep && g->n_ids > (size_t)keep) {
            memmove(g->ids, g->ids + (g->n_ids - (size_t)keep), (size_t)keep * sizeof *g->ids);
            g->n_ids = (size_t)keep;
            g->truncated = 1;
        }
    }
    return 1;
}

/* The log-probability entries a reply may hold: best_of (n unless above
 * it) x, summed over the prompts, (max_tokens + an echoed prompt's tokens)
 * x top_logprobs and, with prompt_logprobs K, the prompt's tokens x (K + 1);
 * within OAI_MAX_LOGPROB_ALTERNATIVES. */
static int gen__check_logprobs(const oai_request *req, const gen_prompt *p, size_t n_prompts,
                               oai_error *err)
{
    int64_t tokens = 0, prompt_entries = 0;
    int echoed = req->echo && req->logprobs;
    for (size_t i = 0; i < n_prompts; i++) {
        tokens += p[i].max_tokens + (echoed ? (int64_t)p[i].n_ids : 0);
        if (req->prompt_logprobs >= 0)
            prompt_entries += (int64_t)p[i].n_ids * (req->prompt_logprobs + 1);
    }
    int64_t alternatives = (int64_t)req->best_of * (tokens * req->top_logprobs + prompt_entries);
    if (alternatives <= OAI_MAX_LOGPROB_ALTERNATIVES) return 1;
    if ((int64_t)req->best_of * prompt_entries > OAI_MAX_LOGPROB_ALTERNATIVES / 2)
        return oai_error_set(
            err, 400, "prompt_logprobs",
            "%s (%d) x the prompt's tokens%s x (prompt_logprobs (%d) + 1), with "
            "the generated tokens' logprobs, is %lld log-probability entries, more "
            "than the %d one request may ask for; lower one of them",
            req->best_of > req->n ? "best_of" : "n", req->best_of,
            n_prompts > 1 ? " of every prompt" : "", req->prompt_logprobs, (long long)alternatives,
            OAI_MAX_LOGPROB_ALTERNATIVES);
    const char *param = req->kind == OAI_CHAT ? "top_logprobs" : "logprobs";
    return oai_error_set(err, 400, param,
                         "%s (%d) x max_tokens (%lld, with an echoed prompt's tokens%s) x %s (%d) "
                         "is %lld log-probability "
                         "alternatives, more than the %d one request may ask for; lower one of "
                         "them (max_tokens defaults to the rest of max_model_len)",
                         req->best_of > req->n ? "best_of" : "n", req->best_of, (long long)tokens,
                         n_prompts > 1 ? ", over every prompt" : "", param, req->top_logprobs,
                         (long long)alternatives, OAI_MAX_LOGPROB_ALTERNATIVES);
}

/* Prompt i (p): not empty, its ids inside the vocabulary, and its length
 * and max_tokens within max_model_len (OpenAI's message), which sets
 * p->max_tokens. A batch's messages begin with the item. */
static int gen__check_prompt(const http_server *s, const oai_request *req, size_t i, gen_prompt *p,
                             oai_error *err)
{
    const char *param = req->kind == OAI_CHAT ? "messages" : "prompt";
    char label[OAI_PROMPT_LABEL_MAX], item[OAI_PROMPT_LABEL_MAX + 2] = "";
    if (req->n_prompts > 1)
        snprintf(item, sizeof item, "%s: ", oai_prompt_label(req, i, label, sizeof label));
    int64_t room = s->max_model_len - (int64_t)p->n_ids;
    if (p->n_ids == 0) return oai_error_set(err, 400, param, "%sthe prompt is empty", item);
    for (size_t k = 0; k < p->n_ids; k++)
        if (p->ids[k] >= s->vocab_size)
            return oai_error_set(err, 400, param,
                                 "%sprompt token %zu is %d, outside the vocabulary [0, %lld)", item,
                                 k, p->ids[k], (long long)s->vocab_size);
    p->max_tokens = req->max_tokens;
    if (req->max_tokens == 0) { /* the rest of max_model_len; echo alone (prompt_only): none */
        int need = !req->prompt_only;
        if (room < need)
            return oai_error_set(err, 400, param,
                                 "%sThis model's maximum context length is %lld tokens. However, "
                                 "your prompt has %zu tokens%s. Please reduce the length of the "
                                 "prompt.",
                                 item, (long long)s->max_model_len, p->n_ids,
                                 need ? ", which leaves no room for any completion" : "");
        int64_t cap = s->cfg.max_tokens_default, absent = req->max_tokens_absent;
        cap = absent > 0 && (cap <= 0 || absent < cap) ? absent : cap;
        if (need) p->max_tokens = cap > 0 && cap < room ? cap : room;
        if (need && req->sampling.min_tokens > p->max_tokens) /* vLLM checks the max it derives */
            return oai_error_set(err, 400, "min_tokens",
                                 "%s'min_tokens' (%lld) must not exceed max_tokens (%lld, what "
                                 "the context leaves)",
                                 item, (long long)req->sampling.min_tokens,
                                 (long long)p->max_tokens);
    } else if (req->max_tokens > room) {
        return oai_error_set(err, 400, param,
                             "%sThis model's maximum context length is %lld tokens. However, you "
                             "requested %lld tokens (%zu in the prompt, %lld for the completion). "
                             "Please reduce the length of the prompt or of max_tokens.",
                             item, (long long)s->max_model_len,
                             (long long)p->n_ids + (long long)req->max_tokens, p->n_ids,
                             (long long)req->max_tokens);
    }
    return 1;
}

/* Every prompt checked (gen__check_prompt), then the log-probability budget. */
static int gen__check_prompts(const http_server *s, const oai_request *req, gen_prompt *p,
                              size_t n_prompts, oai_error *err)
{
    for (size_t i = 0; i < n_prompts; i++)
        if (!gen__check_prompt(s, req, i, &p[i], err)) return 0;
    return gen__check_logprobs(req, p, n_prompts, err);
}

/* The token ids of stop_token_ids, logit_bias and allowed_token_ids against
 * the vocabulary (the engine refuses them too, but without naming the field). */
static int gen__check_token_ids(const http_server *s, const oai_request *req, oai_error *err)
{
    const encore_sampling *sp = &req->sampling;
    for (size_t i = 0; i < sp->n_stop_token_ids; i++)
        if (sp->stop_token_ids[i] >= s->vocab_size)
            return oai_error_set(err, 400, "stop_token_ids",
                                 "'stop_token_ids' holds %d, outside the vocabulary [0, %lld)",
                                 sp->stop_token_ids[i], (long long)s->vocab_size);
    for (size_t i = 0; i < sp->n_logit_bias; i++)
        if (sp->logit_bias[i].id >= s->vocab_size)
            return oai_error_set(err, 400, "logit_bias",
                                 "'logit_bias' has token %d, outside the vocabulary [0, %lld)",
                                 sp->logit_bias[i].id, (long long)s->vocab_size);
    for (size_t i = 0; i < sp->n_allowed_token_ids; i++)
        if (sp->allowed_token_ids[i] >= s->vocab_size)
            return oai_error_set(err, 400, "allowed_token_ids",
                                 "'allowed_token_ids' holds %d, outside the vocabulary [0, %lld)",
                                 sp->allowed_token_ids[i], (long long)s->vocab_size);
    return 1;
}

/* echo (completions): each choice's text begins with its prompt's: the
 * text as sent, or the ids the model reads (prompts[p]: sent as ids, or
 * truncated) detokenized (none when that fails). */
static int gen__echo(gen_job *j, const gen_prompt *prompts, oai_error *err)
{
    oai_request *req = &j->req;
    if (!req->echo || req->kind != OAI_COMPLETION) return 1;
    for (size_t p = 0; p < req->n_prompts; p++) {
        oai_prompt *q = &req->prompts[p];
        char *text = NULL;
        size_t len = 0;
        if (q->text && !prompts[p].truncated) continue;
        free(q->text);
        q->text = NULL;
        if (encore_detokenize(j->srv->engine, prompts[p].ids, prompts[p].n_ids, 0, &text, &len) !=
            ENCORE_OK)
            continue;
        if ((q->text = malloc(len + 1))) {
            memcpy(q->text, text, len);
            q->text[len] = '\0';
        }
        encore_free(text);
    }
    for (int i = 0; i < j->n; i++) {
        const char *t = req->prompts[i / j->per_prompt].text;
        if (!t) t = "";
        if (!gen__append(&j->choices[i].text, &j->choices[i].n_text, t, strlen(t)))
            return oai_error_set(err, 500, NULL, "out of memory");
    }
    return 1;
}

/* echo with max_tokens 0 and no logprobs: each choice's reply is its
 * prompt (gen__echo), nothing for the engine to do; its one event, finished
 * with "length" and no tokens, is made here. */
static int gen__prompt_only(gen_job *j, oai_error *err)
{
    for (int i = 0; i < j->n; i++) {
        gen_choice *c = &j->choices[i];
        gen_event *ev = calloc(1, sizeof *ev);
        if (ev) ev->text = calloc(1, 1);
        if (!ev || !ev->text) {
            gen__event_free(ev);
            return oai_error_set(err, 500, NULL, "out of memory");
        }
        ev->finished = 1;
        snprintf(ev->finish_reason, sizeof ev->finish_reason, "length");
        ev->stop_token_id = -1;
        ev->n_prompt = c->n_prompt;
        pthread_mutex_lock(&j->mu);
        c->head = c->tail = ev;
        c->finished = 1;
        pthread_mutex_unlock(&j->mu);
    }
    return 1;
}

/* The engine's request for a choice of the job, of prompt p, with seed
 * seed + k. */
static encore_request gen__engine_request(const gen_job *j, const gen_prompt *p, int k,
                                          uint64_t seed)
{
    const oai_structured *so = &j->req.structured;
    encore_request r = {.prompt_ids = p->ids,
                        .n_prompt_ids = p->n_ids,
                        .sampling = j->req.sampling,
                        .json_schema = so->json_schema,
                        .regex = so->regex,
                        .grammar = so->grammar,
                        .choices = (const char *const *)so->choices,
                        .n_choices = so->n_choices,
                        .json_object = so->json_object};
    tool_request_constrain(&j->req, j->in_think, &r);
    /* A chat reply may reason before its structured output, as the model
     * would unconstrained (and as vLLM with its reasoning parser lets it):
     * the constraint holds after the think block. */
    if (j->req.kind == OAI_CHAT &&
        (so->json_schema || so->regex || so->n_choices || so->json_object))
        r.think_first = j->in_think ? 2 : j->req.enable_thinking;
    r.sampling.max_tokens = p->max_tokens;
    if (r.sampling.min_tokens > p->max_tokens) r.sampling.min_tokens = p->max_tokens;
    r.sampling.seed = seed + (uint64_t)k;
    if (j->per_prompt > j->req.n) r.sampling.logprobs = 1; /* best_of ranks by them */
    return r;
}

/* Submit the job's choices, choice i of prompt i / n. A given seed is every
 * prompt's, its k-th choice (or candidate) taking seed + k, as vLLM gives
 * each prompt of a batch the request's parameters; without one, choice i
 * takes a drawn seed + i. On failure the ones submitted are cancelled and
 * err says why. */
static int gen__submit(gen_job *j, const gen_prompt *prompts, oai_error *err)
{
    http_server *s = j->srv;
    uint64_t seed = j->req.seed_given ? j->req.sampling.seed : http_random(s);
    for (int i = 0; i < j->n; i++) {
        gen_choice *c = &j->choices[i];
        int k = j->req.seed_given ? i % j->per_prompt : i;
        encore_request r = gen__engine_request(j, &prompts[i / j->per_prompt], k, seed);
        pthread_mutex_lock(&j->mu);
        j->refs++;
        pthread_mutex_unlock(&j->mu);
        int64_t id = -1;
        encore_status st = encore_submit(s->engine, &r, gen__on_output, c, &id);
        pthread_mutex_lock(&j->mu);
        if (st != ENCORE_OK) j->refs--;
        c->request_id = st == ENCORE_OK ? id : -1;
        int cancel_now = st == ENCORE_OK && j->cancelled && !c->finished;
        pthread_mutex_unlock(&j->mu);
        if (cancel_now) encore_cancel(s->engine, id);
        if (st != ENCORE_OK) {
            http_error_from_encore(err, st, "the request was refused");
            if (r.tool_calls && err->http_status == 400) /* a tool's schema: the field */
                snprintf(err->param, sizeof err->param, "tools");
            gen__cancel(j);
            return 0;
        }
    }
    return 1;
}

/* A completion or chat request: its prompts checked and admitted (n choices
 * each), the job submitted, then the reply (whole or streamed). */
enum MHD_Result gen_handle(http_server *s, struct MHD_Connection *conn, oai_request *req, int fd,
                           double t_arrival, const char *client)
{
    oai_error err;
    gen_prompt *prompts = NULL;
    size_t n_prompts = 0;
    enum MHD_Result r;
    if (req->ignored[0]) /* as vLLM logs them: accepted, but a client may expect an effect */
        encore_log_warning("%s: the following fields were present in the request but ignored: %s",
                           req->responses          ? "/v1/responses"
                           : req->kind == OAI_CHAT ? "/v1/chat/completions"
                                                   : "/v1/completions",
                           req->ignored);
    if (req->model && strcmp(req->model, s->model_name) != 0) {
        http_error_no_model(s, req->model, &err);
        goto refuse;
    }
    if (!tool_request_compatible(req, &err) || !gen__prompts(s, req, &prompts, &n_prompts, &err) ||
        !gen__check_prompts(s, req, prompts, n_prompts, &err) ||
        !gen__check_token_ids(s, req, &err))
        goto refuse;
    int n_choices = (int)n_prompts * req->best_of; /* at most OAI_MAX_PROMPTS x OAI_MAX_N */
    const char *why = n_prompts > 1 ? "prompt" : req->best_of > req->n ? "best_of" : "n";
    if (!http_admit(s, client, n_choices, 1, why, &err)) goto refuse;
    gen_job *j = gen__job_new(s, req, n_choices, fd, t_arrival, client);
    if (!j) {
        http_admit_release(s, client, n_choices, 1);
        oai_error_set(&err, 500, NULL, "out of memory");
        goto refuse;
    }
    for (size_t i = 0; i < n_prompts; i++)
        j->n_prompt += prompts[i].n_ids;
    for (int i = 0; i < n_choices; i++)
        j->choices[i].n_prompt = prompts[i / j->per_prompt].n_ids;
    int engine_free = j->req.prompt_only && !j->req.sampling.prompt_logprobs; /* echo alone */
    if (!gen__echo(j, prompts, &err) ||
        !(engine_free ? gen__prompt_only(j, &err) : gen__submit(j, prompts, &err))) {
        gen__prompts_free(prompts, n_prompts);
        if (j->req.responses) oai_responses_error_names(&err);
        r = http_reply_error(s, conn, &err);
        gen__release(j);
        return r;
    }
    gen__prompts_free(prompts, n_prompts);
    return j->req.stream ? gen__reply_stream(j, conn) : gen__reply_whole(j, conn);

refuse:
    if (req->responses) oai_responses_error_names(&err);
    gen__prompts_free(prompts, n_prompts);
    oai_request_free(req);
    return http_reply_error(s, conn, &err);
}
