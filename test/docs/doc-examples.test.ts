/**
 * Every shell example of README.md and docs/cli.md, run as a reader runs it: each command with bash,
 * in the doc's order and in one working folder (a later command reads what an earlier one wrote),
 * against a real `voxd serve` on loopback with no config (what `npm start` serves). The docs say
 * port 8080; the commands get the test server's port instead. A command passes when it exits 0
 * (curl fails on an HTTP error status here), writes no error event, writes the files it names, and,
 * when it transcribes a file a command of the doc spoke, prints the text that was spoken. A command
 * that cannot run here is listed in SKIPPED with its reason, and shows as skipped; any other
 * command, a new one too, runs.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { VoxdProcess } from '../helpers/cli.js';
import { readMarkdown, shellCommands } from './markdown.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** A command that has not finished after this long has failed (a cold engine load included). */
const COMMAND_MS = 180_000;

interface Skip {
  doc: string;
  /** The command's first line starts with this. */
  starts: string;
  why: string;
}

/** The commands that cannot run in a test, each with why; every entry must match a command. */
const SKIPPED: Skip[] = [
  {
    doc: 'README.md',
    starts: 'npm start',
    why: 'installs with npm ci and apt-get, then serves until stopped',
  },
  { doc: 'README.md', starts: 'npm test', why: 'the whole suite; this test is part of it' },
  { doc: 'README.md', starts: 'npm run build', why: 'the test runs on the build it tests' },
  {
    doc: 'README.md',
    starts: 'node dist/src/cli/main.js serve --config server.json',
    why: 'a template (a config of your own, [optional flags]) that serves until stopped',
  },
  {
    doc: 'README.md',
    starts: 'voxd models pull whisper-base.en',
    why: 'downloads from the hub (no network here; test/models pulls from a local mirror)',
  },
  {
    doc: 'README.md',
    starts: 'voxd transcribe hello.wav -m whisper-base.en',
    why: 'needs the package the skipped pull installs',
  },
  {
    doc: 'README.md',
    starts: 'voxd models rm whisper-base.en',
    why: 'needs the package the skipped pull installs',
  },
  { doc: 'docs/cli.md', starts: 'voxd speak "Hello there" | aplay', why: 'plays on a sound card' },
  {
    doc: 'docs/cli.md',
    starts: 'voxd models pull',
    why: 'downloads from the hub or example.com (no network here; test/models pulls from a local mirror)',
  },
  {
    doc: 'docs/cli.md',
    starts: 'voxd transcribe talk.wav -m whisper-base.en',
    why: 'needs the package the skipped pull installs',
  },
  {
    doc: 'docs/cli.md',
    starts: 'voxd models rm whisper-base.en',
    why: 'needs the package the skipped pull installs',
  },
];

/**
 * The files a doc's examples take as the reader's own (docs/cli.md transcribes "meeting.mp3"), made
 * before its commands run: what flite says into each, and its container.
 */
const GIVEN: Record<string, Record<string, { text: string; make: 'wav' | 'mp3' | 'mkv' }>> = {
  'README.md': {},
  'docs/cli.md': {
    'meeting.mp3': { text: 'Please call me tomorrow morning.', make: 'mp3' },
    'talk.wav': { text: 'The weather is nice today. Please call me tomorrow morning.', make: 'wav' },
    'call.wav': { text: 'Please call me tomorrow morning.', make: 'wav' },
    'video.mkv': { text: 'The weather is nice today.', make: 'mkv' },
  },
};

const AUDIO_FILE = /[\w.-]+\.(?:wav|mp3|mkv|ogg|opus|flac|m4a|aac|webm)\b/g;

/** What a transcript is compared on: lower-case words, no punctuation. */
const words = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z']+/g, ' ')
    .trim();

/** The files a command writes: `-o FILE` and `> FILE` (not stdout itself). */
function outputsOf(command: string): string[] {
  return [...command.matchAll(/(?:^|\s)(?:-o|>)\s*([\w.-]+)/g)].map((m) => m[1]!).filter((f) => f !== '-');
}

/** The text a command speaks into a file: a speech request's `input`, or `voxd speak`'s text. */
function spokenText(command: string): string | undefined {
  return (/"input":"([^"]*)"/.exec(command) ??
    /voxd speak "([^"]*)"/.exec(command) ??
    /echo "([^"]*)" \| voxd speak/.exec(command))?.[1];
}

/** Whether a command asks a speech recogniser for a transcript (the diarizer's answer has no text). */
const transcribes = (command: string) =>
  /\/v1\/(?:audio|batches)\/transcriptions|voxd transcribe/.test(command) && !/model=diarizer/.test(command);

/** Checks of the answers whose shape says more than "no error": by a pattern the command matches. */
const ANSWERS: { command: RegExp; answer: RegExp }[] = [
  { command: /\/health$/, answer: /"status":"ok"/ },
  { command: /\/v1\/models$/, answer: /"id":"espeak".*"id":"festival".*"id":"flite".*"id":"pocketsphinx"/ },
  { command: /model=diarizer/, answer: /"speaker_turns":\[\{"start_sample":\d+/ },
  { command: /silero-vad/, answer: /"segments":\[\{"start_sample":\d+/ },
  { command: /"stream":true/, answer: /speech\.audio\.delta[\s\S]*speech\.audio\.done[\s\S]*\[DONE\]/ },
  { command: /stream=true|\/live\?/, answer: /transcript\.text\.done[\s\S]*\[DONE\]/ },
  { command: /\/v1\/batches\/transcriptions/, answer: /"result_count":2,"error_count":0/ },
  {
    command: /response_format=srt|--format srt/,
    answer: /^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n/,
  },
  { command: /voxd diarize/, answer: /^(?:\d+\.\d{3} \d+\.\d{3} \d+\n)+$/ },
  { command: /voxd vad .*--format json/, answer: /^\{"segments":\[\{"start":/ },
  { command: /voxd models list(?: +#.*)?$/, answer: /^ID +FAMILY +TASK +SIZE +INSTALLED\n/ },
  {
    command: /voxd models info whisper-base\.en(?: +#.*)?$/,
    answer: /^id: whisper-base\.en\n[\s\S]*installed: false\n/,
  },
];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one command with bash in `cwd`; the aliases earlier commands defined carry over in `state`. */
function runCommand(command: string, cwd: string, env: NodeJS.ProcessEnv, state: string): Promise<Run> {
  // Aliases are expanded as each line is read, so the one that loads them comes on its own line.
  const script = `shopt -s expand_aliases\nset -o pipefail\nsource ${JSON.stringify(state)}\n${command}\nrc=$?\nalias -p > ${JSON.stringify(state)}\nexit $rc\n`;
  return new Promise((resolve, reject) => {
    // Its own process group, so that a command past its deadline ends with every process it started.
    const child = spawn('bash', ['-c', script], {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${COMMAND_MS} ms)`;
      process.kill(-child.pid!, 'SIGKILL');
    }, COMMAND_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The format ffprobe finds in a file, or why it found none. */
function probe(file: string): string {
  try {
    return execFileSync(
      'ffprobe',
      ['-v', 'error', '-show_entries', 'format=format_name', '-of', 'csv=p=0', file],
      {
        encoding: 'utf8',
      },
    ).trim();
  } catch (err) {
    return `unreadable (${(err as Error).message.split('\n')[0]})`;
  }
}

const AUDIO_FORMATS: Record<string, string> = { wav: 'wav', mp3: 'mp3', mkv: 'matroska,webm' };

let server: VoxdProcess;
let port = 0;
let base = '';
const scratch = mkdtempSync(join(tmpdir(), 'voxd-doc-examples-'));

before(async () => {
  server = new VoxdProcess(['serve', '--port', '0'], {
    env: { ...process.env, VOXD_DATA_DIR: join(scratch, 'server-data'), VOXD_ENABLE_FIXTURE: '' },
  });
  ({ url: base, port } = await server.listening());
});

after(async () => {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** A speech file made by the test's server (flite's slt voice), for the doc's given files. */
async function makeGiven(file: string, text: string, make: 'wav' | 'mp3' | 'mkv'): Promise<void> {
  const format = make === 'mp3' ? 'mp3' : 'wav';
  const res = await fetch(`${base}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'flite', input: text, voice: 'slt', response_format: format }),
  });
  assert.equal(res.status, 200, `speech for ${file}`);
  const audio = Buffer.from(await res.arrayBuffer());
  if (make !== 'mkv') return writeFileSync(file, audio);
  writeFileSync(`${file}.wav`, audio);
  // A video with a sound track: a still black picture under the speech.
  execFileSync('ffmpeg', [
    ...['-v', 'error', '-f', 'lavfi', '-i', 'color=c=black:s=64x64:r=5', '-i', `${file}.wav`],
    ...['-shortest', '-c:v', 'mpeg4', '-c:a', 'pcm_s16le', file],
  ]);
  rmSync(`${file}.wav`);
}

for (const doc of ['README.md', 'docs/cli.md']) {
  describe(`the shell examples of ${doc}`, () => {
    const commands = shellCommands(readMarkdown(doc));
    const skips = SKIPPED.filter((skip) => skip.doc === doc);
    const cwd = join(scratch, doc.replace(/\W/g, '-'));
    const state = join(cwd, '.aliases');
    const bin = join(cwd, '.bin');
    /** What each file holds, as spoken text, once a command (or the test) spoke it. */
    const spoken = new Map<string, string>();
    let env: NodeJS.ProcessEnv = {};

    before(async () => {
      mkdirSync(bin, { recursive: true });
      // The README's commands run where a reader's checkout would be: `$PWD/dist/...` is the build.
      symlinkSync(join(REPO_ROOT, 'dist'), join(cwd, 'dist'));
      writeFileSync(state, '');
      // curl -s answers an HTTP error with exit 0; here it fails the command, as it should.
      const curl = execFileSync('bash', ['-c', 'command -v curl'], { encoding: 'utf8' }).trim();
      writeFileSync(join(bin, 'curl'), `#!/bin/sh\nexec ${curl} --fail-with-body "$@"\n`);
      chmodSync(join(bin, 'curl'), 0o755);
      if (doc !== 'README.md') {
        // docs/cli.md takes the `voxd` command as installed (the README's alias, or npx voxd).
        writeFileSync(
          join(bin, 'voxd'),
          `#!/bin/sh\nexec node ${join(REPO_ROOT, 'dist/src/cli/main.js')} "$@"\n`,
        );
        chmodSync(join(bin, 'voxd'), 0o755);
      }
      const { KEY: _key, VOXD_API_KEY: _apiKey, VOXD_ENABLE_FIXTURE: _fixture, ...rest } = process.env;
      env = { ...rest, PATH: `${bin}:${process.env['PATH']}`, VOXD_DATA_DIR: join(cwd, '.voxd-data') };
      for (const [file, given] of Object.entries(GIVEN[doc] ?? {})) {
        await makeGiven(join(cwd, file), given.text, given.make);
        spoken.set(file, given.text);
      }
    });

    test('every skipped command is one of the doc, so a list entry cannot outlive its example', () => {
      for (const skip of skips)
        assert.ok(
          commands.some((command) => command.startsWith(skip.starts)),
          `${doc} has no command starting "${skip.starts}"; drop it from SKIPPED`,
        );
    });

    for (const [index, command] of commands.entries()) {
      const skip = skips.find((entry) => command.startsWith(entry.starts));
      const name = `${index + 1}: ${command.split('\n')[0]}`;
      if (skip) {
        test(name, { skip: skip.why }, () => {});
        continue;
      }
      test(name, async () => {
        const local = command.replace(/\b(localhost|127\.0\.0\.1):8080\b/g, `$1:${port}`);
        assert.doesNotMatch(local, /:8080\b/, 'a server address other than localhost:8080 or 127.0.0.1:8080');
        const run = await runCommand(local, cwd, env, state);
        const shown = `\n--- stdout:\n${run.stdout.slice(-2000)}\n--- stderr:\n${run.stderr.slice(-2000)}`;
        assert.equal(run.code, 0, `exit status ${run.code}${shown}`);
        assert.doesNotMatch(run.stdout, /"type":"error"|^\{"error":/m, `an error in the answer${shown}`);
        // What the command answered: stdout and the text files it wrote (`> talk.srt`).
        let answer = run.stdout;
        const outputs = outputsOf(command);
        for (const file of outputs) {
          const path = join(cwd, file);
          assert.ok(existsSync(path) && readFileSync(path).length > 0, `${file} was not written${shown}`);
          const extension = file.split('.').pop()!;
          const format = AUDIO_FORMATS[extension];
          if (format) assert.equal(probe(path), format, `${file} is not ${extension} audio`);
          else answer += readFileSync(path, 'utf8');
        }
        for (const check of ANSWERS)
          if (check.command.test(command)) assert.match(answer, check.answer, `the answer${shown}`);
        if (transcribes(command)) {
          const inputs = (command.match(AUDIO_FILE) ?? []).filter((file) => !outputs.includes(file));
          for (const file of inputs) {
            const text = spoken.get(file);
            if (text !== undefined)
              assert.ok(
                words(answer).includes(words(text)),
                `the transcript of ${file} should be "${words(text)}"${shown}`,
              );
          }
        }
        const text = spokenText(command);
        for (const file of outputs) if (text !== undefined) spoken.set(file, text);
      });
    }
  });
}
