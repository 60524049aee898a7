// openai_client.mjs - `encore serve` through the official `openai` npm package.
//
//   node openai_client.mjs NODE_PREFIX BASE_URL MODEL [logprobs|keepalive|tools|responses|embeddings]
//
// NODE_PREFIX is where `npm install --prefix` put the package (the test
// fixture server_npm_install). Runs completions, chat, streaming chat (with
// usage), n > 1 with a seed, a batch of prompts, stop strings and error cases, or with
// `logprobs` the logprobs of completions and chat (a test of its own: it
// needs an engine that records log-probabilities), or with `keepalive` one
// stream against a server whose first tokens come after its --timeout (the
// SSE ": keep-alive" comments in between must be skipped), or with `tools` tool
// calling (tools, tool_choice auto and none, "required" and a named function enforced, a turn
// after tool results, the refusals), or with `responses` the Responses API
// (create, stream, a named tool and the turn after it), or with `embeddings`
// client.embeddings.create against an embedding model (the client asks for
// base64 and decodes it; the same vectors as "float"; dimensions; a refusal);
// prints one "ok" line per check and exits 1 at the first failure.
import { createRequire } from 'node:module';
import path from 'node:path';

const [prefix, baseURL, model, mode] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(prefix), 'package.json'));
const OpenAI = require('openai');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120000 });

function check(cond, what, detail) {
  if (!cond) {
    console.error(`FAIL: ${what}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
}

const greedy = { model, temperature: 0 };
const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Name a color.' }];

if (mode === 'embeddings') {
  const input = ['The quick brown fox', 'Hi'];
  const b64 = await client.embeddings.create({ model, input }); // the client's default: base64
  const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  check(b64.object === 'list' && b64.data.length === 2 && b64.data.every((d, i) => d.index === i &&
        d.object === 'embedding' && Array.isArray(d.embedding) && d.embedding.length === 64 &&
        Math.abs(norm(d.embedding) - 1) < 1e-5) && b64.usage.prompt_tokens > 0, 'embeddings (base64)', b64);
  const flt = await client.embeddings.create({ model, input, encoding_format: 'float' });
  check(flt.data.every((d, i) => d.embedding.every((x, k) => Math.fround(x) === b64.data[i].embedding[k])),
        'the float vectors are the base64 ones', flt.data[0].embedding.slice(0, 4));
  console.log('ok embeddings: 2 unit vectors of 64, base64 (the client\'s default) and float the same');
  const cut = await client.embeddings.create({ model, input: 'Hi', dimensions: 16 });
  check(cut.data[0].embedding.length === 16 && Math.abs(norm(cut.data[0].embedding) - 1) < 1e-5,
        'dimensions 16', cut.data[0]);
  console.log('ok embeddings with dimensions 16');
  try {
    await client.embeddings.create({ model, input: [] });
    check(false, 'an empty input is refused', null);
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400, 'an empty input: 400', String(e));
  }
  console.log('ok embeddings: an empty input is a 400');
  process.exit(0);
}

if (mode === 'logprobs') {
  // logprobs: completions (count) and chat (bool + top_logprobs)
  const lpc = await client.completions.create({ ...greedy, prompt: 'Hello', max_tokens: 5, logprobs: 2 });
  const lp = lpc.choices[0].logprobs;
  check(lp && lp.tokens.length === 5 && lp.token_logprobs.length === 5 && lp.top_logprobs.length === 5 &&
        lp.text_offset.length === 5 && lp.token_logprobs.every((x) => x <= 0) &&
        lp.top_logprobs.every((t) => Object.keys(t).length >= 1), 'completions logprobs', lp);
  console.log(`ok completions logprobs: ${JSON.stringify(lp.tokens)}`);
  const lpchat = await client.chat.completions.create({ ...greedy, messages, max_tokens: 5, logprobs: true,
                                                        top_logprobs: 3 });
  const content = lpchat.choices[0].logprobs?.content;
  check(content && content.length === 5 && content.every((t) => t.logprob <= 0 && t.top_logprobs.length === 3 &&
        Array.isArray(t.bytes)), 'chat logprobs', lpchat.choices[0]);
  // greedy: the chosen token is the most likely one
  check(content.every((t) => t.top_logprobs[0].logprob === t.logprob), 'greedy picks the top logprob', content);
  console.log('ok chat logprobs with top_logprobs 3');
  process.exit(0);
}

if (mode === 'keepalive') {
  let text = '', usage = null, chunks = 0;
  const stream = await client.chat.completions.create({ ...greedy, messages, max_tokens: 2, ignore_eos: true,
                                                        stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    chunks++;
    text += chunk.choices[0]?.delta?.content ?? '';
    usage = chunk.usage ?? usage;
  }
  check(usage && usage.completion_tokens === 2, 'a stream kept alive by SSE comments', { chunks, text, usage });
  console.log(`ok stream past --timeout: ${chunks} chunks, the keep-alive comments skipped`);
  process.exit(0);
}

if (mode === 'responses') {
  // the Responses API: output_text (which the package computes from the
  // output items), the stream through its ResponseStream (whose accumulator
  // refuses an event out of order), a named tool and the turn after it
  const ask = { ...greedy, instructions: 'Be brief.', input: 'Name a color.', max_output_tokens: 12 };
  const whole = await client.responses.create(ask);
  check(whole.object === 'response' && typeof whole.output_text === 'string' &&
        ['completed', 'incomplete'].includes(whole.status) && whole.usage.output_tokens > 0 &&
        whole.usage.total_tokens === whole.usage.input_tokens + whole.usage.output_tokens, 'responses.create', whole);
  console.log(`ok responses.create: ${JSON.stringify(whole.output_text)} (${whole.status})`);
  const stream = client.responses.stream(ask);
  let deltas = '';
  stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const final = await stream.finalResponse(); // (this version's finalResponse has no output_text)
  const textOf = (r) => r.output.filter((o) => o.type === 'message').flatMap((o) => o.content)
    .filter((p) => p.type === 'output_text').map((p) => p.text).join('');
  check(textOf(final) === whole.output_text && deltas === whole.output_text && final.status === whole.status &&
        final.usage.output_tokens === whole.usage.output_tokens, 'responses.stream', { final, whole, deltas });
  let events = 0;
  for await (const e of await client.responses.create({ ...ask, stream: true })) events += e.type ? 1 : 0;
  check(events > 6, 'responses.create stream: true', events);
  console.log(`ok responses.stream: its accumulator took every event, the same text (${events} events)`);
  const unit = { type: 'function', name: 'set_unit', strict: true, parameters: { type: 'object',
    properties: { unit: { type: 'string', enum: ['c', 'k'] } }, required: ['unit'], additionalProperties: false } };
  const call = await client.responses.create({ ...greedy, input: 'Celsius, please.', tools: [unit],
    tool_choice: { type: 'function', name: 'set_unit' }, max_output_tokens: 40,
    chat_template_kwargs: { enable_thinking: false } }); // no think block first: the call within 40 tokens
  const fc = call.output.find((o) => o.type === 'function_call');
  check(fc && fc.name === 'set_unit' && fc.call_id && ['c', 'k'].includes(JSON.parse(fc.arguments).unit),
        'a named tool', call.output);
  const next = await client.responses.create({ ...greedy, tools: [unit], max_output_tokens: 8, input: [
    { role: 'user', content: 'Celsius, please.' }, fc, { type: 'function_call_output', call_id: fc.call_id,
      output: 'done' }] });
  check(next.usage.input_tokens > call.usage.input_tokens, 'the turn after a call', next.usage);
  console.log(`ok a named tool: ${fc.arguments}, and the turn after its output`);
  try {
    await client.responses.create({ ...ask, previous_response_id: whole.id });
    check(false, 'previous_response_id', 'no error');
  } catch (e) {
    check(e instanceof OpenAI.NotFoundError && e.param === 'previous_response_id', 'previous_response_id',
          { status: e.status, param: e.param });
    console.log(`ok previous_response_id: 404, ${e.message}`);
  }
  process.exit(0);
}

if (mode === 'tools') {
  // tool calling through the package's types: tools with auto and none, the
  // same text streamed (assembled by the package's ChatCompletionStream),
  // a conversation with calls and their results, and the refusals
  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'The weather in a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
  ];
  const ask = { ...greedy, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, max_tokens: 16 };
  const whole = await client.chat.completions.create(ask);
  const m = whole.choices[0].message;
  check(['length', 'stop', 'tool_calls'].includes(whole.choices[0].finish_reason) &&
        (m.tool_calls === undefined || Array.isArray(m.tool_calls)), 'chat with tools', whole);
  const none = await client.chat.completions.create({ ...ask, tool_choice: 'none' });
  check(none.usage.prompt_tokens === whole.usage.prompt_tokens, 'tool_choice none shows the tools too',
        [none.usage, whole.usage]);
  console.log(`ok chat with tools (auto, none): ${JSON.stringify(m.content)}`);
  const runner = client.beta.chat.completions.stream(ask);
  const streamed = await runner.finalChatCompletion();
  const sm = streamed.choices[0].message;
  check(sm.content === m.content && JSON.stringify(sm.tool_calls ?? []) === JSON.stringify(m.tool_calls ?? []) &&
        streamed.choices[0].finish_reason === whole.choices[0].finish_reason, 'streamed with tools',
        { streamed: streamed.choices[0], whole: whole.choices[0] });
  console.log('ok streamed with tools: ChatCompletionStream assembles the same message');
  const talk = [
    { role: 'user', content: 'Weather in Paris, and the time?' },
    { role: 'assistant', content: null, tool_calls: [
      { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_a', content: '21 C' },
    { role: 'tool', tool_call_id: 'call_b', content: '09:14' },
  ];
  const turn = await client.chat.completions.create({ ...greedy, messages: talk, tools, max_tokens: 8 });
  const ids = await (await fetch(baseURL.replace(/\/v1$/, '') + '/tokenize', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: talk, tools }),
  })).json();
  check(turn.usage.prompt_tokens === ids.count && ids.count > whole.usage.prompt_tokens, 'a turn after tool results',
        [turn.usage, ids.count]);
  console.log(`ok a turn after two calls and their results: ${turn.usage.prompt_tokens} prompt tokens`);
  async function refused(extra, param) {
    try {
      await client.chat.completions.create({ ...ask, ...extra });
    } catch (e) {
      check(e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === param, `refused ${param}`,
            { name: e.name, status: e.status, param: e.param, message: e.message });
      console.log(`ok 400 ${param}: ${e.message}`);
      return;
    }
    check(false, `refused ${param}`, 'no error');
  }
  // "required" and a named function are enforced: with random weights only
  // the grammar makes the model call; every call allowed, arguments valid
  function argsValid(call) {
    const args = JSON.parse(call.function.arguments);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) return false;
    return call.function.name === 'get_time' ? Object.keys(args).length === 0
      : Object.keys(args).join() === 'city' && typeof args.city === 'string' && [...args.city].length <= 8;
  }
  const bounded = [ // properties that end: random weights would write keys forever
    { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {
      city: { type: 'string', maxLength: 8 } }, required: ['city'], additionalProperties: false } } },
    { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {},
      additionalProperties: false } } },
  ];
  let called = 0;
  for (const [choice, names] of [['required', ['get_weather', 'get_time']],
    [{ type: 'function', function: { name: 'get_time' } }, ['get_time']]]) {
    for (const seed of [1, 2, 3]) {
      const req = { ...ask, tools: bounded, tool_choice: choice, temperature: 1, seed, max_tokens: 96,
                    chat_template_kwargs: { enable_thinking: false } };
      const got = [await client.chat.completions.create(req),
        await client.beta.chat.completions.stream(req).finalChatCompletion()];
      const done = choice === 'required' ? 'tool_calls' : 'stop'; // a named function: "stop" (OpenAI's)
      for (const c of got.map((r) => r.choices[0])) {
        check([done, 'length'].includes(c.finish_reason), `tool_choice ${JSON.stringify(choice)}`, c);
        if (c.finish_reason !== done) continue;
        called++;
        const calls = c.message.tool_calls;
        check(calls.length >= 1 && (choice === 'required' || calls.length === 1) &&
              calls.every((t) => names.includes(t.function.name) && argsValid(t)),
              `tool_choice ${JSON.stringify(choice)}: calls`, calls);
      }
    }
  }
  check(called >= 6, 'enforced tool choices call tools', called);
  console.log(`ok tool_choice required and named: ${called} of 12 replies called allowed tools, arguments valid`);
  await refused({ tool_choice: { type: 'function', function: { name: 'send_mail' } } },
                'tool_choice.function.name');
  await refused({ tools: [{ type: 'function', function: { name: 'no spaces' } }] }, 'tools[0].function.name');
  await refused({ messages: [{ role: 'assistant', tool_calls: [{ id: 'x', type: 'function',
                  function: { name: 'get_time', arguments: 'not json' } }] }] },
                'messages[0].tool_calls[0].function.arguments');
  process.exit(0);
}

// models
const models = await client.models.list();
check(models.data.length === 1 && models.data[0].id === model, 'models.list', models.data);
console.log(`ok models.list: ${models.data[0].id}`);

// completions
const comp = await client.completions.create({ ...greedy, prompt: 'The capital of France is', max_tokens: 10 });
check(comp.object === 'text_completion' && comp.choices.length === 1 && comp.choices[0].text.length > 0 &&
      comp.choices[0].finish_reason === 'length' && comp.usage.completion_tokens === 10 &&
      comp.usage.total_tokens === comp.usage.prompt_tokens + 10, 'completions', comp);
console.log(`ok completions: ${JSON.stringify(comp.choices[0].text)}`);

// completions from token ids give the same text as from the string
const tok = await (await fetch(baseURL.replace(/\/v1$/, '') + '/tokenize', {
  method: 'POST', headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ prompt: 'The capital of France is' }),
})).json();
const byIds = await client.completions.create({ ...greedy, prompt: tok.tokens, max_tokens: 10 });
check(byIds.choices[0].text === comp.choices[0].text, 'completions from token ids', [byIds, comp]);
console.log('ok completions from token ids == from text');

// a batch of prompts: n choices each, choice p * n + j the j-th of prompt p, each the prompt's
// alone; usage counts each prompt once
const once = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 10 });
const batch = await client.completions.create({ ...greedy, prompt: ['The capital of France is', 'Once upon a time'],
                                                max_tokens: 10, n: 2 });
check(batch.choices.length === 4 && batch.choices.map((c) => c.index).join() === '0,1,2,3' &&
      JSON.stringify(batch.choices.map((c) => c.text)) ===
        JSON.stringify([comp, comp, once, once].map((r) => r.choices[0].text)) &&
      batch.usage.prompt_tokens === comp.usage.prompt_tokens + once.usage.prompt_tokens &&
      batch.usage.completion_tokens === 2 * (comp.usage.completion_tokens + once.usage.completion_tokens),
      'a batch of prompts', { batch, comp, once });
console.log(`ok a batch of 2 prompts x n 2: ${JSON.stringify(batch.choices.map((c) => c.text))}`);

// logit_bias: +100 on one id makes every token that id; an id outside the
// vocabulary is a 400 naming logit_bias
const forcedId = tok.tokens[tok.tokens.length - 1];
const forced = await client.completions.create({ ...greedy, prompt: tok.tokens, max_tokens: 4,
                                                 logit_bias: { [forcedId]: 100 } });
const forcedText = await (await fetch(baseURL.replace(/\/v1$/, '') + '/detokenize', {
  method: 'POST', headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ tokens: [forcedId, forcedId, forcedId, forcedId] }),
})).json();
check(forced.choices[0].text === forcedText.prompt && forced.usage.completion_tokens === 4, 'logit_bias +100',
      [forced, forcedText]);
try {
  await client.completions.create({ model, prompt: 'x', max_tokens: 2, logit_bias: { 999999999: 1 } });
  check(false, 'logit_bias outside the vocabulary', 'no error');
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'logit_bias',
        'logit_bias outside the vocabulary', { status: e.status, param: e.param, message: e.message });
}
console.log(`ok logit_bias: +100 on id ${forcedId} gives ${JSON.stringify(forced.choices[0].text)}`);

// chat, and the same streamed
const chat = await client.chat.completions.create({ ...greedy, messages, max_tokens: 12 });
const msg = chat.choices[0].message;
check(chat.object === 'chat.completion' && msg.role === 'assistant' && typeof msg.content === 'string' &&
      chat.usage.completion_tokens > 0, 'chat', chat);
console.log(`ok chat: ${JSON.stringify(msg.content)}`);

const stream = await client.chat.completions.create({
  ...greedy, messages, max_tokens: 12, stream: true, stream_options: { include_usage: true },
});
let text = '', finish = null, usage = null, n = 0;
for await (const chunk of stream) {
  n++;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    text += c.delta.content ?? '';
    finish = c.finish_reason ?? finish;
  }
}
check(text === msg.content && finish === chat.choices[0].finish_reason &&
      usage && usage.completion_tokens === chat.usage.completion_tokens, 'streaming chat',
      { text, finish, usage, whole: chat });
console.log(`ok streaming chat: ${n} chunks, text and usage equal the whole reply's`);

// thinking off through chat_template_kwargs (a parameter the package passes through)
const noThink = await client.chat.completions.create({
  ...greedy, messages, max_tokens: 4, chat_template_kwargs: { enable_thinking: false },
});
check(noThink.usage.prompt_tokens > chat.usage.prompt_tokens, 'enable_thinking false adds the empty think block',
      [noThink.usage, chat.usage]);
console.log('ok chat_template_kwargs.enable_thinking');

// n > 1 with a seed: indexed choices, reproducible
const sampled = { model, prompt: 'Once upon a time', max_tokens: 8, temperature: 1.0, n: 3, seed: 1234 };
const a = await client.completions.create(sampled);
const b = await client.completions.create(sampled);
check(a.choices.length === 3 && a.choices.map((c) => c.index).join() === '0,1,2' &&
      a.usage.completion_tokens === 24, 'n = 3', a);
check(JSON.stringify(a.choices.map((c) => c.text)) === JSON.stringify(b.choices.map((c) => c.text)),
      'n = 3 with a seed is reproducible', [a.choices, b.choices]);
check(new Set(a.choices.map((c) => c.text)).size > 1, 'n = 3 choices differ (seeds seed+i)', a.choices);
console.log(`ok n = 3: ${JSON.stringify(a.choices.map((c) => c.text))}`);

// stop strings: cut the greedy text at a piece of itself
const long = await client.completions.create({ ...greedy, prompt: 'The capital of France is', max_tokens: 24,
                                               ignore_eos: true });
const chars = Array.from(long.choices[0].text);
check(chars.length >= 8, 'a long enough text for the stop test', long.choices[0].text);
const stopAt = chars.slice(4, 7).join('');
const cut = long.choices[0].text.slice(0, long.choices[0].text.indexOf(stopAt));
const stopped = await client.completions.create({ ...greedy, prompt: 'The capital of France is', max_tokens: 24,
                                                  ignore_eos: true, stop: ['@@never@@', stopAt] });
check(stopped.choices[0].text === cut && stopped.choices[0].finish_reason === 'stop' &&
      stopped.choices[0].stop_reason === stopAt, 'stop string', { stopped, cut, stopAt });
console.log(`ok stop ${JSON.stringify(stopAt)}: ${JSON.stringify(cut)}, finish_reason stop`);

// errors come back as the package's error classes with the server's message
async function expectError(cls, status, params, what) {
  try {
    await client.completions.create(params);
  } catch (e) {
    check(e instanceof cls && e.status === status && typeof e.message === 'string' && e.message.length > 0,
          what, { name: e.name, status: e.status, message: e.message });
    console.log(`ok ${what}: ${e.status} ${e.message}`);
    return;
  }
  check(false, what, 'no error');
}
await expectError(OpenAI.NotFoundError, 404, { model: 'no-such-model', prompt: 'x', max_tokens: 2 }, 'unknown model');
await expectError(OpenAI.BadRequestError, 400, { model, prompt: 'x', max_tokens: -3 }, 'negative max_tokens');
await expectError(OpenAI.BadRequestError, 400, { model, prompt: 'x', max_tokens: 100000 }, 'too long for the model');
