// `steno serve` driven by the official `openai` npm package: the SDK's own request encoding (multipart, arrays as
// `timestamp_granularities[]`), response parsing (JSON vs text by Content-Type) and error mapping (BadRequestError,
// NotFoundError, ...) against the real server, the bundled diarizer beside the model (diarized_json, parsed as the
// SDK's TranscriptionDiarized) and streamed events (stream: true). run_test.sh starts the server and sets
// STENO_BASE_URL (http://127.0.0.1:PORT/v1), STENO_TESTSET (tests/data/testset/espeak) and STENO_DIAR_TESTSET
// (tests/data/diar-testset); run it through CTest:
//   ctest --test-dir build -R openai_node_client --output-on-failure
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import OpenAI, { toFile } from 'openai';

const baseURL = process.env.STENO_BASE_URL;
const testset = process.env.STENO_TESTSET;
const diarTestset = process.env.STENO_DIAR_TESTSET;
assert.ok(baseURL, 'STENO_BASE_URL is not set (run this through run_test.sh)');
assert.ok(testset, 'STENO_TESTSET is not set (run this through run_test.sh)');
assert.ok(diarTestset, 'STENO_DIAR_TESTSET is not set (run this through run_test.sh)');

// maxRetries 0: the SDK retries 408/409/429/5xx by default, which would hide a failure or double its time.
const client = new OpenAI({ baseURL, apiKey: 'sk-dummy-not-checked', maxRetries: 0, timeout: 120_000 });

// The clips and the transcripts they must produce, from the committed test set.
const references = new Map(
  fs.readFileSync(path.join(testset, 'reference_transcripts.tsv'), 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => line.split('\t')),
);
function clip(name) {
  const rel = `audio/${name}`;
  const text = references.get(rel);
  assert.ok(text, `${rel} is not in reference_transcripts.tsv`);
  return { file: path.join(testset, rel), text, words: text.split(' ') };
}
const main = clip('test-0000009.flac');    // "the baby weighed twelve pounds nine ounces", 2.95 s
const second = clip('test-0000003.flac');  // "an economy that is basically rural", 2.55 s

// A FLAC file's length in seconds, from its STREAMINFO block (the first metadata block, right after "fLaC").
function flacSeconds(file) {
  const b = fs.readFileSync(file);
  assert.equal(b.toString('latin1', 0, 4), 'fLaC', `${file} is not a FLAC file`);
  assert.equal(b[4] & 0x7f, 0, `${file}: the first metadata block is not STREAMINFO`);
  const rate = (b[18] << 12) | (b[19] << 4) | (b[20] >> 4);
  const samples = (b[21] & 0x0f) * 2 ** 32 + b.readUInt32BE(22);
  return samples / rate;
}
const mainSeconds = flacSeconds(main.file);
// A two-speaker conversation of the held-out diarization set, its shortest (17 s).
const conversation = path.join(diarTestset, 'conv06.flac');

// The served models' ids, as a client discovers them: the transcription model first, then the diarizer.
let modelIds;
async function models() {
  if (!modelIds) {
    modelIds = [];
    for await (const m of client.models.list()) modelIds.push(m.id);
    assert.equal(modelIds.length, 2, `expected the model and the diarizer, got ${JSON.stringify(modelIds)}`);
  }
  return modelIds;
}
async function model() {
  return (await models())[0];
}

// The error a promise rejects with (fails when it resolves).
async function rejection(promise) {
  try {
    const value = await promise;
    assert.fail(`expected an error, got ${JSON.stringify(value)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    return e;
  }
}

// Parses SRT or VTT cues; each is {start, end, text} in seconds. Fails on anything not well-formed.
function parseCues(body, kind) {
  const sep = kind === 'srt' ? ',' : '.';
  const time = `(\\d{2}):([0-5]\\d):([0-5]\\d)\\${sep}(\\d{3})`;
  const timing = new RegExp(`^${time} --> ${time}$`);
  let rest = body;
  if (kind === 'vtt') {
    assert.ok(rest.startsWith('WEBVTT\n\n'), `VTT must start with "WEBVTT" and a blank line: ${JSON.stringify(body)}`);
    rest = rest.slice('WEBVTT\n\n'.length);
  }
  assert.ok(rest.endsWith('\n\n'), `the last cue must end with a blank line: ${JSON.stringify(body)}`);
  const seconds = (m, i) => +m[i] * 3600 + +m[i + 1] * 60 + +m[i + 2] + +m[i + 3] / 1000;
  return rest.slice(0, -2).split('\n\n').map((block, i) => {
    const lines = block.split('\n');
    if (kind === 'srt') assert.equal(lines.shift(), String(i + 1), `SRT cue ${i + 1}'s index: ${JSON.stringify(body)}`);
    const m = timing.exec(lines.shift() ?? '');
    assert.ok(m, `cue ${i + 1} has no well-formed timing line: ${JSON.stringify(body)}`);
    assert.ok(lines.length > 0 && lines.every((l) => l.trim().length > 0), `cue ${i + 1} has no text: ${JSON.stringify(body)}`);
    return { start: seconds(m, 1), end: seconds(m, 5), text: lines.join(' ') };
  });
}

test('models.list() lists the bundled model and diarizer, and models.retrieve() returns it', async () => {
  const id = await model();
  assert.equal(id, 'steno-tdt-small-en');
  const page = await client.models.list();
  assert.deepEqual(page.data.map((m) => [m.id, m.object, m.owned_by]),
    [[id, 'model', 'steno'], ['steno-sortformer-small', 'model', 'steno']]);
  assert.equal(typeof page.data[0].created, 'number');
  const one = await client.models.retrieve(id);
  assert.equal(one.id, id);
  assert.equal(one.object, 'model');
});

test('json (the default): a file stream gives the exact reference transcript', async () => {
  const { data, response, request_id } = await client.audio.transcriptions
    .create({ file: fs.createReadStream(main.file), model: await model() })
    .withResponse();
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^application\/json/);
  assert.match(request_id ?? '', /^req-\d+$/, 'every response carries X-Request-Id: req-N');
  assert.deepEqual({ ...data }, { text: main.text });
});

test('toFile(Buffer): an in-memory upload gives the exact reference transcript', async () => {
  const file = await toFile(fs.readFileSync(second.file), 'clip.flac', { type: 'audio/flac' });
  const res = await client.audio.transcriptions.create({ file, model: await model(), language: 'en' });
  assert.equal(res.text, second.text);
});

test("response_format 'text': the transcript and a newline, as text/plain", async () => {
  const { data, response } = await client.audio.transcriptions
    .create({ file: fs.createReadStream(main.file), model: await model(), response_format: 'text' })
    .withResponse();
  assert.match(response.headers.get('content-type'), /^text\/plain/);
  assert.equal(typeof data, 'string');
  assert.equal(data, `${main.text}\n`);
});

// Filled in by the verbose_json test; srt/vtt cues must be these segments.
let segments;

test("response_format 'verbose_json' with word and segment timestamps", async () => {
  const res = await client.audio.transcriptions.create({
    file: fs.createReadStream(main.file),
    model: await model(),
    response_format: 'verbose_json',
    timestamp_granularities: ['word', 'segment'],
  });
  assert.equal(res.task, 'transcribe');
  assert.equal(res.language, 'english');
  assert.equal(res.text, main.text);
  assert.ok(Math.abs(res.duration - mainSeconds) <= 0.0015, `duration ${res.duration}, the clip is ${mainSeconds} s`);
  assert.deepEqual(res.usage, { type: 'duration', seconds: res.duration });

  // Words: the transcript's words, in order, with monotone times inside the clip.
  assert.ok(Array.isArray(res.words), 'words[] was asked for');
  assert.deepEqual(res.words.map((w) => w.word), main.words);
  let previousEnd = 0;
  for (const w of res.words) {
    assert.equal(typeof w.start, 'number');
    assert.equal(typeof w.end, 'number');
    assert.ok(w.start >= previousEnd, `word '${w.word}' starts at ${w.start}, before the previous word's end ${previousEnd}`);
    assert.ok(w.end >= w.start, `word '${w.word}' ends (${w.end}) before it starts (${w.start})`);
    previousEnd = w.end;
  }
  assert.ok(previousEnd <= res.duration, `the last word ends at ${previousEnd}, after the audio (${res.duration} s)`);
  const span = res.words.at(-1).end - res.words[0].start;
  assert.ok(span >= 0.5 * res.duration, `the words span only ${span} s of ${res.duration} s: timings look degenerate`);

  // Segments: OpenAI's field set, monotone, inside the clip, covering the words and the text.
  assert.ok(Array.isArray(res.segments) && res.segments.length > 0, 'segments[] was asked for');
  let segmentEnd = 0;
  res.segments.forEach((s, i) => {
    assert.equal(s.id, i);
    assert.equal(s.seek, 0);
    assert.ok(s.start >= segmentEnd && s.end >= s.start && s.end <= res.duration,
      `segment ${i} [${s.start}, ${s.end}] is not monotone inside [0, ${res.duration}]`);
    segmentEnd = s.end;
    for (const key of ['temperature', 'avg_logprob', 'compression_ratio', 'no_speech_prob'])
      assert.equal(typeof s[key], 'number', `segment ${i}.${key}`);
    assert.ok(Array.isArray(s.tokens), `segment ${i}.tokens`);
  });
  assert.equal(res.segments.map((s) => s.text.trim()).join(' '), main.text);
  assert.ok(res.segments[0].start <= res.words[0].start && res.segments.at(-1).end >= res.words.at(-1).end,
    'the segments do not cover the words');
  segments = res.segments;
});

for (const kind of ['srt', 'vtt']) {
  test(`response_format '${kind}': well-formed cues with the words, at the segments' times`, async () => {
    const body = await client.audio.transcriptions.create({
      file: fs.createReadStream(main.file),
      model: await model(),
      response_format: kind,
    });
    assert.equal(typeof body, 'string');
    const cues = parseCues(body, kind);
    assert.ok(cues.length > 0, `no cues: ${JSON.stringify(body)}`);
    let previousEnd = 0;
    for (const c of cues) {
      assert.ok(c.start >= previousEnd && c.end >= c.start && c.end <= mainSeconds + 0.0005,
        `cue [${c.start}, ${c.end}] is not monotone inside the ${mainSeconds} s clip`);
      previousEnd = c.end;
    }
    assert.deepEqual(cues.map((c) => c.text).join(' ').split(' '), main.words);
    if (segments) {  // the same clip's verbose_json segments (null when that test failed)
      assert.deepEqual(cues.map((c) => [c.start, c.end, c.text]),
        segments.map((s) => [s.start, s.end, s.text.trim()]));
    }
  });
}

test('a file that is not audio: BadRequestError (400) naming the problem', async () => {
  const text = Buffer.from('this is a text file, not a recording\n'.repeat(20));
  const err = await rejection(client.audio.transcriptions.create({
    file: await toFile(text, 'notes.txt', { type: 'text/plain' }),
    model: await model(),
  }));
  assert.ok(err instanceof OpenAI.BadRequestError, `expected BadRequestError, got ${err}`);
  assert.ok(err instanceof OpenAI.APIError);
  assert.equal(err.status, 400);
  assert.equal(err.type, 'invalid_request_error');
  assert.equal(err.param, 'file');
  assert.match(err.message, new RegExp(`^400 not an audio file: the ${text.length} bytes look like text`));
  assert.match(err.requestID ?? '', /^req-\d+$/);
});

// What existing OpenAI apps send: OpenAI's own model names reach the served model (default aliases), unchanged.
for (const name of ['whisper-1', 'default', 'gpt-4o-transcribe', 'gpt-4o-transcribe-diarize']) {
  test(`model '${name}' as OpenAI apps send it: the served model's exact reference transcript`, async () => {
    const res = await client.audio.transcriptions.create({ file: fs.createReadStream(main.file), model: name });
    assert.equal(res.text, main.text);
    const retrieved = await client.models.retrieve(name);
    assert.equal(retrieved.id, name);
    assert.equal(retrieved.root, await model(), 'an alias names the model it stands for');
  });
}

test('an unknown model: NotFoundError (404) model_not_found listing the served model and its aliases, never a '
  + 'substitution', async () => {
  const err = await rejection(client.audio.transcriptions.create({
    file: fs.createReadStream(main.file),
    model: 'whisper-2',
  }));
  assert.ok(err instanceof OpenAI.NotFoundError, `expected NotFoundError, got ${err}`);
  assert.equal(err.status, 404);
  assert.equal(err.code, 'model_not_found');
  assert.equal(err.param, 'model');
  assert.equal(err.type, 'invalid_request_error');
  assert.match(err.message, /^404 model 'whisper-2' is not served here; available: 'steno-tdt-small-en' \(also: whisper-1, gpt-4o-transcribe, gpt-4o-mini-transcribe, gpt-4o-transcribe-diarize, default\), 'steno-sortformer-small' \(also: diarizer\)$/);

  const err2 = await rejection(client.models.retrieve('whisper-2'));
  assert.ok(err2 instanceof OpenAI.NotFoundError, `models.retrieve: expected NotFoundError, got ${err2}`);
  assert.equal(err2.code, 'model_not_found');
});

test('settings steno cannot honour are refused with 400 naming the field; translation is 501', async () => {
  const refused = [
    [{ language: 'fr' }, 'language', /language 'fr' is not supported/],
    [{ temperature: 0.5 }, 'temperature', /temperature 0.5 is not supported/],
    [{ response_format: 'json', timestamp_granularities: ['word'] }, 'timestamp_granularities[]',
      /requires response_format=verbose_json/],
  ];
  for (const [fields, param, message] of refused) {
    const err = await rejection(client.audio.transcriptions.create({
      file: fs.createReadStream(main.file),
      model: await model(),
      ...fields,
    }));
    assert.ok(err instanceof OpenAI.BadRequestError, `${JSON.stringify(fields)}: expected BadRequestError, got ${err}`);
    assert.equal(err.param, param);
    assert.match(err.message, message);
  }
  const err = await rejection(client.audio.translations.create({
    file: fs.createReadStream(main.file),
    model: await model(),
  }));
  assert.ok(err instanceof OpenAI.InternalServerError, `expected InternalServerError (501), got ${err}`);
  assert.equal(err.status, 501);
  assert.match(err.message, /translation is not supported/);
});

test("response_format 'diarized_json' with gpt-4o-transcribe-diarize: the SDK's TranscriptionDiarized", async () => {
  const res = await client.audio.transcriptions.create({
    file: fs.createReadStream(conversation),
    model: 'gpt-4o-transcribe-diarize',
    response_format: 'diarized_json',
    chunking_strategy: 'auto',  // what OpenAI requires of this model for audio over 30 s; steno takes it
  });
  assert.equal(res.task, 'transcribe');
  assert.ok(Math.abs(res.duration - flacSeconds(conversation)) <= 0.0015, `duration ${res.duration}`);
  assert.deepEqual(res.usage, { type: 'duration', seconds: res.duration });
  assert.ok(res.text.length > 0);
  assert.ok(Array.isArray(res.segments) && res.segments.length >= 2, `segments: ${JSON.stringify(res.segments)}`);
  let previousStart = 0;
  res.segments.forEach((s, i) => {
    assert.deepEqual(Object.keys(s).sort(), ['end', 'id', 'speaker', 'start', 'text', 'type']);
    assert.equal(s.type, 'transcript.text.segment');
    assert.equal(s.id, `seg_${i}`);
    assert.match(s.speaker, /^speaker_\d$/);
    assert.ok(s.start >= previousStart && s.end >= s.start && s.end <= res.duration + 0.0005,
      `segment ${i} [${s.start}, ${s.end}] is not in order inside the audio`);
    assert.ok(s.text.length > 0, `segment ${i} has no text`);
    previousStart = s.start;
  });
  assert.equal(res.segments.map((s) => s.text).join(' '), res.text);
  assert.ok(new Set(res.segments.map((s) => s.speaker)).size === 2, 'the conversation has two speakers');
  for (let i = 1; i < res.segments.length; ++i)  // a turn ends on a speaker change or a pause over 1 s
    assert.ok(res.segments[i].speaker !== res.segments[i - 1].speaker
      || res.segments[i].start - res.segments[i - 1].end > 1.0, `segment ${i} neither changes speaker nor pauses`);

  // known_speaker_names (sent by the SDK as known_speaker_names[]): names in the order speakers first speak.
  const named = await client.audio.transcriptions.create({
    file: fs.createReadStream(conversation),
    model: 'gpt-4o-transcribe-diarize',
    response_format: 'diarized_json',
    known_speaker_names: ['agent', 'customer'],
    chunking_strategy: { type: 'server_vad', threshold: 0.5, silence_duration_ms: 500 },
  });
  const first = res.segments[0].speaker;
  assert.deepEqual(named.segments.map((s) => s.speaker),
    res.segments.map((s) => (s.speaker === first ? 'agent' : 'customer')));
});

test('stream: true: the SDK iterates transcript.text.delta events that join into the text, then done', async () => {
  const stream = await client.audio.transcriptions.create({
    file: fs.createReadStream(main.file),
    model: 'gpt-4o-transcribe',
    stream: true,
  });
  const events = [];
  for await (const event of stream) events.push(event);
  assert.ok(events.length >= 2, JSON.stringify(events));
  const done = events.at(-1);
  assert.equal(done.type, 'transcript.text.done');
  assert.equal(done.text, main.text);
  const deltas = events.slice(0, -1);
  assert.ok(deltas.every((e) => e.type === 'transcript.text.delta'), JSON.stringify(deltas));
  assert.equal(deltas.map((e) => e.delta).join(''), main.text);
});

test("stream: true with diarized_json: each speaker segment after its words' deltas, as diarized_json's", async () => {
  const whole = await client.audio.transcriptions.create({
    file: fs.createReadStream(conversation),
    model: 'gpt-4o-transcribe-diarize',
    response_format: 'diarized_json',
  });
  const stream = await client.audio.transcriptions.create({
    file: fs.createReadStream(conversation),
    model: 'gpt-4o-transcribe-diarize',
    response_format: 'diarized_json',
    stream: true,
  });
  const segments = [];
  let text = '';
  let done = null;
  for await (const event of stream) {
    if (event.type === 'transcript.text.delta') {
      assert.equal(event.segment_id, `seg_${segments.length}`);
      text += event.delta;
    } else if (event.type === 'transcript.text.segment') {
      segments.push(event);
    } else {
      done = event;
    }
  }
  assert.deepEqual(segments, whole.segments);
  assert.equal(text, whole.text);
  assert.equal(done.type, 'transcript.text.done');
  assert.equal(done.text, whole.text);
});

test("verbose_json with diarize=true (NeMo-Speech.cpp's field): every word and segment has a speaker", async () => {
  const res = await client.audio.transcriptions.create({
    file: fs.createReadStream(conversation),
    model: await model(),
    response_format: 'verbose_json',
    timestamp_granularities: ['word', 'segment'],
    diarize: true,
  });
  assert.ok(res.words.length > 0 && res.words.every((w) => /^speaker_\d$/.test(w.speaker)), JSON.stringify(res.words));
  assert.ok(res.segments.every((s) => /^speaker_\d$/.test(s.speaker)));
  assert.equal(new Set(res.words.map((w) => w.speaker)).size, 2);
});

test('speakers steno cannot give are refused with 400 naming the field', async () => {
  const refused = [
    [{ known_speaker_names: ['agent'], known_speaker_references: ['data:audio/wav;base64,UklGRg=='] },
      'known_speaker_references[]', /cannot match voices/],
    [{ timestamp_granularities: ['word'] }, 'timestamp_granularities[]', /does not apply to diarized_json/],
    [{ known_speaker_names: ['a', 'b', 'c', 'd', 'e'] }, 'known_speaker_names[]', /at most 4/],
  ];
  for (const [fields, param, message] of refused) {
    const err = await rejection(client.audio.transcriptions.create({
      file: fs.createReadStream(main.file),
      model: 'gpt-4o-transcribe-diarize',
      response_format: 'diarized_json',
      ...fields,
    }));
    assert.ok(err instanceof OpenAI.BadRequestError, `${JSON.stringify(fields)}: expected BadRequestError, got ${err}`);
    assert.equal(err.param, param);
    assert.match(err.message, message);
  }
});
