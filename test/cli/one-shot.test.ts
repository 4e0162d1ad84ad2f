/**
 * The one-shot commands (`voxd speak`, `transcribe`, `diarize`, `vad`) run as child processes, as
 * users run them: in-process with the embedded models, and against a server started here (--url).
 * Every child has a deadline and is killed by its own pid if it overruns.
 */

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { probeFfmpeg } from '../../src/audio/ffmpeg.js';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { EMBEDDED_MODELS } from '../../src/config/embedded-models.js';
import { startServer, type TestServer, waitUntil } from '../helpers/voxd.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
/** A command loads its engine from cold: generous, but a hang still fails the test. */
const DEADLINE_MS = 60_000;
const SENTENCE = 'Hello world, this is a test of the voice server.';

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

/** Starts `voxd <args>`; `stdin` is written and closed (no stdin at all when undefined). */
function start(args: string[], options: { stdin?: string | Buffer; env?: NodeJS.ProcessEnv } = {}) {
  const child = spawn(process.execPath, [MAIN, ...args], {
    // The models root is made at startup: under the test's folder, never in the home folder.
    env: { VOXD_DATA_DIR: join(dir, 'data'), ...(options.env ?? process.env) },
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  const out: Buffer[] = [];
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const done = new Promise<Run>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`voxd ${args.join(' ')} ran past ${DEADLINE_MS} ms; stderr:\n${stderr}`));
    }, DEADLINE_MS);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(out), stderr });
    });
  });
  return { child, done };
}

function voxd(args: string[], options: { stdin?: string | Buffer; env?: NodeJS.ProcessEnv } = {}) {
  return start(args, options).done;
}

/** Asserts a clean success: exit 0 and nothing on stderr. */
function ok(run: Run, what: string): Run {
  assert.equal(run.code, 0, `${what}: exit ${run.code}, stderr:\n${run.stderr}`);
  assert.equal(run.stderr, '', `${what}: stderr should be empty`);
  return run;
}

/** Asserts a failure with `code` and exactly one stderr line `voxd: ...`; returns that line. */
function failed(run: Run, code: number, what: string): string {
  assert.equal(run.code, code, `${what}: exit ${run.code}, stderr:\n${run.stderr}`);
  assert.equal(run.stdout.length, 0, `${what}: stdout should be empty`);
  assert.match(run.stderr, /^voxd: [^\n]+\n$/, `${what}: one line on stderr`);
  return run.stderr;
}

/** Words the recogniser got right out of SENTENCE's. */
function wordsHeard(text: string): string[] {
  const heard = new Set(text.toLowerCase().match(/[a-z]+/g) ?? []);
  return ['hello', 'world', 'this', 'test', 'voice', 'server'].filter((w) => heard.has(w));
}

let dir = '';
let speechWav = '';
/** flite's SENTENCE, 2 s of silence, and SENTENCE again: speech at both ends of a known gap. */
let gapWav = '';
let gap: [number, number] = [0, 0];
let longWav = '';
let mp3 = false;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'voxd-one-shot-'));
  mp3 = (await probeFfmpeg('ffmpeg')).encodings.includes('mp3');
  speechWav = join(dir, 'speech.wav');
  ok(await voxd(['speak', SENTENCE, '-m', 'flite', '-o', speechWav]), 'speak flite');
  const first = decodeWav(readFileSync(speechWav));
  const rate = first.sampleRate;
  const silence = new Float32Array(2 * rate);
  const samples = new Float32Array(floats(first).length * 2 + silence.length);
  samples.set(floats(first), 0);
  samples.set(floats(first), floats(first).length + silence.length);
  gap = [floats(first).length / rate, (floats(first).length + silence.length) / rate];
  gapWav = join(dir, 'gap.wav');
  writeFileSync(gapWav, encodeWav({ samples, sampleRate: rate, channels: 1 }));
  // 36 s: long enough for a progress line, were stderr a terminal.
  const repeats = Math.ceil(36 / (floats(first).length / rate));
  const long = new Float32Array(floats(first).length * repeats);
  for (let i = 0; i < repeats; i++) long.set(floats(first), i * floats(first).length);
  longWav = join(dir, 'long.wav');
  writeFileSync(longWav, encodeWav({ samples: long, sampleRate: rate, channels: 1 }));
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('in-process', () => {
  test('speak -o file.wav writes a WAV and nothing to stdout', async () => {
    const out = join(dir, 'hello.wav');
    const run = ok(await voxd(['speak', 'Hello there', '-o', out]), 'speak');
    assert.equal(run.stdout.length, 0);
    const audio = decodeWav(readFileSync(out));
    assert.ok(floats(audio).length > audio.sampleRate / 4, 'at least a quarter second of speech');
  });

  test('speak with stdout piped writes the WAV to stdout; -o - does the same', async () => {
    for (const args of [
      ['speak', 'Hello there'],
      ['speak', 'Hello there', '-o', '-'],
    ]) {
      const run = ok(await voxd(args), args.join(' '));
      assert.equal(run.stdout.subarray(0, 4).toString('latin1'), 'RIFF');
      assert.ok(floats(decodeWav(run.stdout)).length > 0);
    }
  });

  test('speak -o file.mp3 encodes MP3 through ffmpeg; --format pcm writes raw samples', async (t) => {
    if (!mp3) return t.skip('ffmpeg with libmp3lame is not installed');
    const out = join(dir, 'hello.mp3');
    ok(await voxd(['speak', 'Hello there', '-o', out, '--speed', '1.2']), 'speak mp3');
    const bytes = readFileSync(out);
    const id3 = bytes.subarray(0, 3).toString('latin1') === 'ID3';
    const frame = bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0;
    assert.ok(id3 || frame, `not MP3: ${bytes.subarray(0, 4).toString('hex')}`);
    const pcm = ok(await voxd(['speak', 'Hello there', '--format', 'pcm']), 'pcm');
    assert.notEqual(pcm.stdout.subarray(0, 4).toString('latin1'), 'RIFF');
    assert.equal(pcm.stdout.length % 2, 0, '16-bit samples');
  });

  test("transcribe gets flite's words back from pocketsphinx, from a file and from stdin", async () => {
    const run = ok(await voxd(['transcribe', speechWav]), 'transcribe');
    const text = run.stdout.toString('utf8');
    assert.ok(text.endsWith('\n') && !text.slice(0, -1).includes('\n'), 'one line of text');
    assert.ok(wordsHeard(text).length >= 4, `heard: ${text}`);
    const piped = ok(
      await voxd(['transcribe', '-', '-m', 'pocketsphinx'], { stdin: readFileSync(speechWav) }),
      '-',
    );
    assert.equal(piped.stdout.toString('utf8'), text, 'the same audio, the same text');
  });

  test('speak reads its text from stdin without a text argument, or with -', async () => {
    for (const args of [
      ['speak', '-m', 'flite'],
      ['speak', '-', '-m', 'flite'],
    ]) {
      const run = ok(await voxd(args, { stdin: `${SENTENCE}\n` }), args.join(' '));
      const heard = ok(await voxd(['transcribe', '-'], { stdin: run.stdout }), 'transcribe');
      assert.ok(wordsHeard(heard.stdout.toString('utf8')).length >= 4, heard.stdout.toString('utf8'));
    }
  });

  test('transcribe --format srt, vtt, json and verbose_json', async () => {
    const srt = ok(await voxd(['transcribe', speechWav, '--format', 'srt']), 'srt').stdout.toString('utf8');
    assert.match(srt, /^1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n.*hello/);
    const vtt = ok(await voxd(['transcribe', speechWav, '--format', 'vtt']), 'vtt').stdout.toString('utf8');
    assert.match(vtt, /^WEBVTT\n\n00:00:\d\d\.\d{3} --> /);
    const json = JSON.parse(
      ok(await voxd(['transcribe', speechWav, '--format', 'json']), 'json').stdout.toString(),
    );
    assert.ok(wordsHeard(json.text).length >= 4);
    // The answer /v1/audio/transcriptions gives: OpenAI's language name, the duration and usage.
    assert.deepEqual(Object.keys(json), ['text', 'language', 'duration', 'usage', 'timing']);
    assert.deepEqual(
      [json.language, json.usage],
      ['english', { type: 'duration', seconds: Math.ceil(json.duration) }],
    );
    const verbose = JSON.parse(
      ok(await voxd(['transcribe', speechWav, '--format', 'verbose_json']), 'verbose').stdout.toString(),
    );
    assert.equal(verbose.task, 'transcribe');
    assert.ok(verbose.duration > 1 && verbose.segments.length >= 1);
    assert.equal(verbose.language, 'english');
    assert.deepEqual(verbose.usage, json.usage);
  });

  test('vad finds the speech on both sides of a 2 s silence', async () => {
    const run = ok(await voxd(['vad', gapWav]), 'vad');
    const lines = run.stdout.toString('utf8').trimEnd().split('\n');
    for (const line of lines) assert.match(line, /^\d+\.\d{3} \d+\.\d{3}$/);
    const spans = lines.map((l) => l.split(' ').map(Number) as [number, number]);
    assert.ok(spans.length >= 2, run.stdout.toString());
    assert.ok(spans.every(([s, e]) => s < e));
    assert.ok(
      spans.every(([s, e]) => e <= gap[0] + 0.3 || s >= gap[1] - 0.3),
      'no speech in the silence',
    );
    assert.ok(spans.some(([, e]) => e <= gap[0] + 0.3) && spans.some(([s]) => s >= gap[1] - 0.3));
    const json = JSON.parse(ok(await voxd(['vad', gapWav, '--format', 'json']), 'json').stdout.toString());
    assert.deepEqual(
      json.segments.map((s: { start: number; end: number }) => [s.start, s.end]),
      spans,
    );
  });

  test('diarize prints speaker turns, as lines or as JSON, from a file or stdin', async () => {
    const run = ok(await voxd(['diarize', gapWav]), 'diarize');
    const lines = run.stdout.toString('utf8').trimEnd().split('\n');
    assert.ok(lines.length >= 1);
    for (const line of lines) assert.match(line, /^\d+\.\d{3} \d+\.\d{3} \d+$/);
    const json = JSON.parse(
      ok(
        await voxd(['diarize', '-', '--format', 'json'], { stdin: readFileSync(gapWav) }),
        'json',
      ).stdout.toString(),
    );
    assert.equal(json.turns.length, lines.length);
    for (const turn of json.turns) {
      assert.ok(turn.start < turn.end && Number.isInteger(turn.speaker), JSON.stringify(turn));
    }
    assert.equal(json.turns[0].speaker, 0);
  });

  test('a long input with stderr not a terminal: stdout holds only the result, stderr nothing', async () => {
    const run = ok(await voxd(['vad', longWav]), 'vad long');
    const text = run.stdout.toString('utf8');
    assert.match(text, /^(\d+\.\d{3} \d+\.\d{3}\n)+$/);
    assert.ok(text.split('\n').length > 5);
  });

  test('with stderr a terminal, a long input shows a progress line there, cleared before the result', async (t) => {
    // script(1) runs the command on a pseudo-terminal: stdout and stderr both reach it.
    const script = spawnSync('script', ['--version'], { encoding: 'utf8' });
    if (script.status !== 0) return t.skip('script(1) from util-linux is not installed');
    const command = [process.execPath, MAIN, 'vad', longWav].map((a) => `'${a}'`).join(' ');
    const run = spawnSync('script', ['-qec', command, '/dev/null'], {
      encoding: 'utf8',
      timeout: DEADLINE_MS,
    });
    assert.equal(run.status, 0, run.stdout);
    const clear = '\r\u001b[K';
    assert.ok(
      run.stdout.startsWith(`${clear}voxd: finding speech in `),
      JSON.stringify(run.stdout.slice(0, 80)),
    );
    assert.match(run.stdout, /of audio with silero-vad\.\.\. \d+ s/);
    const result = run.stdout.slice(run.stdout.lastIndexOf(clear) + clear.length);
    assert.match(result, /^(\d+\.\d{3} \d+\.\d{3}\r?\n)+$/, 'the line is cleared before the result');
  });

  test('Ctrl-C ends at once with 130 and kills the runner process', async () => {
    // The runner forked for the recogniser is alive while a long file is transcribed.
    const { child, done } = start(['transcribe', longWav]);
    let runner: number | undefined;
    await waitUntil(
      'the runner process to start',
      () => {
        runner = childrenOf(child.pid!).find((pid) => cmdline(pid).includes('engine-process'));
        return runner !== undefined;
      },
      DEADLINE_MS,
    );
    child.kill('SIGINT');
    const run = await done;
    assert.equal(run.code, 130, run.stderr);
    assert.equal(run.stdout.length, 0);
    await waitUntil('the runner to end', () => !alive(runner!), 5000);
  });
});

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** Whether `pid` still runs (a zombie counts as ended: it is only waiting to be reaped). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('usage and failures', () => {
  test('--help of every command exits 0 with its usage and the exit codes', async () => {
    for (const command of ['speak', 'transcribe', 'diarize', 'vad']) {
      const run = ok(await voxd([command, '--help']), command);
      const text = run.stdout.toString('utf8');
      assert.ok(text.startsWith(`Usage: voxd ${command}`), text);
      for (const word of ['--model', '--url', '--api-key', '--config', 'Exit status', '130']) {
        assert.ok(text.includes(word), `${command} --help lacks ${word}`);
      }
    }
    const top = ok(await voxd(['--help']), '--help').stdout.toString('utf8');
    for (const command of ['speak', 'transcribe', 'diarize', 'vad']) assert.ok(top.includes(command));
  });

  test('bad usage exits 2 before any engine starts', async () => {
    const cases = [
      ['transcribe'],
      ['transcribe', speechWav, '--bogus'],
      ['transcribe', speechWav, '-m'],
      ['transcribe', speechWav, '--format', 'mp3'],
      ['transcribe', speechWav, speechWav],
      ['vad', speechWav, '--voice', 'x'],
      ['speak', 'hi', '-o', join(dir, 'out.xyz')],
      ['speak', 'hi', '--speed', 'fast'],
      ['speak', 'hi', '--url', 'not a url'],
      ['speak', '   '],
    ];
    for (const args of cases) failed(await voxd(args), 2, args.join(' '));
  });

  test('a missing file, an unknown model or a model of the wrong task exits 1', async () => {
    assert.match(
      failed(await voxd(['transcribe', join(dir, 'missing.wav')]), 1, 'missing'),
      /missing\.wav: no such file/,
    );
    assert.match(failed(await voxd(['speak', 'hi', '-m', 'nope', '-o', '-']), 1, 'unknown'), /nope/);
    failed(await voxd(['transcribe', speechWav, '-m', 'flite']), 1, 'wrong task');
    failed(await voxd(['transcribe', '-'], { stdin: 'not audio at all' }), 1, 'not audio');
  });

  test('a catalogue model that is not installed says how to install it', async () => {
    const message = failed(
      await voxd(['transcribe', speechWav, '-m', 'whisper-base.en']),
      1,
      'not installed',
    );
    assert.match(
      message,
      /unknown model id: "whisper-base\.en": it is in voxd's model catalogue but not installed/,
    );
    assert.match(
      message,
      /run `voxd models pull whisper-base\.en` \(or install it from the web UI's Installer tab\)/,
    );
  });

  test("OpenAI's model names reach the embedded models: -m whisper-1 transcribes, -m tts-1 speaks", async () => {
    const heard = ok(await voxd(['transcribe', speechWav, '-m', 'whisper-1']), 'whisper-1');
    assert.equal(
      heard.stdout.toString(),
      ok(await voxd(['transcribe', speechWav]), 'default').stdout.toString(),
    );
    const spoken = ok(await voxd(['speak', SENTENCE, '-m', 'tts-1', '-o', '-']), 'tts-1');
    assert.ok(spoken.stdout.equals(readFileSync(speechWav)), 'tts-1 speaks as flite');
  });
});

describe('--models-root', () => {
  test('is made when missing, as by voxd serve; a root that cannot be made exits 2', async () => {
    const root = join(dir, 'models-here');
    ok(await voxd(['vad', speechWav, '--models-root', root]), '--models-root');
    assert.ok(statSync(root).isDirectory());
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    assert.match(
      failed(await voxd(['vad', speechWav, '--models-root', join(file, 'x')]), 2, 'bad root'),
      /models_root/,
    );
  });
});

describe('--url: on a running server', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ models: EMBEDDED_MODELS });
  });
  after(() => server.close());

  test('speak, transcribe, vad and diarize answer as in-process', async () => {
    const url = server.url;
    const spoken = ok(await voxd(['speak', SENTENCE, '-m', 'flite', '--url', url]), 'speak');
    assert.equal(spoken.stdout.subarray(0, 4).toString('latin1'), 'RIFF');
    const heard = ok(await voxd(['transcribe', '-', '--url', url], { stdin: spoken.stdout }), 'transcribe');
    assert.ok(wordsHeard(heard.stdout.toString('utf8')).length >= 4, heard.stdout.toString());
    const srt = ok(await voxd(['transcribe', speechWav, '--url', url, '--format', 'srt']), 'srt');
    assert.match(srt.stdout.toString('utf8'), /^1\n00:00:\d\d,\d{3} --> /);
    for (const command of ['vad', 'diarize']) {
      const local = ok(await voxd([command, gapWav]), command).stdout.toString();
      const remote = ok(await voxd([command, gapWav, '--url', url]), `${command} --url`).stdout.toString();
      assert.equal(remote, local, `${command}: the same spans on the server`);
    }
  });

  test('an unknown model is the server 404 as one line, exit 1; an unreachable server exits 1', async () => {
    const message = failed(
      await voxd(['transcribe', speechWav, '--url', server.url, '-m', 'nope']),
      1,
      'unknown',
    );
    assert.match(message, /404.*nope/);
    const notInstalled = failed(
      await voxd(['transcribe', speechWav, '--url', server.url, '-m', 'whisper-tiny.en']),
      1,
      'not installed',
    );
    assert.match(notInstalled, /404.*voxd models pull whisper-tiny\.en/);
    failed(await voxd(['vad', speechWav, '--url', 'http://127.0.0.1:9']), 1, 'unreachable');
  });

  test('--api-key, or $VOXD_API_KEY, is sent as a bearer token', async () => {
    const seen: (string | undefined)[] = [];
    const fake: Server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'audio/wav' }).end('RIFF'));
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
      ok(await voxd(['speak', 'hi', '-m', 'm', '--url', url, '--api-key', 'k1']), '--api-key');
      ok(
        await voxd(['speak', 'hi', '-m', 'm', '--url', url], { env: { ...process.env, VOXD_API_KEY: 'k2' } }),
        'env',
      );
      assert.deepEqual(seen, ['Bearer k1', 'Bearer k2']);
    } finally {
      fake.closeAllConnections();
      await new Promise((resolve) => fake.close(resolve));
    }
  });
});
