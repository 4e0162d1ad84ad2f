/**
 * Dockerfile linted. No docker build here (the machine cannot pull a base image) and no hadolint
 * (not packaged for Debian 12), so a small parser reads the Dockerfile's instructions and the
 * checks below hold it to the rules that matter for this image: a pinned base, a non-root user,
 * a health check, no remote ADD, lean apt-get layers, the same Debian packages as
 * scripts/debian-packages.mjs, the default port exposed, and COPY sources that exist and are not
 * excluded by .dockerignore. Each rule is also run against a bad snippet, so none passes vacuously.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadServerConfig } from '../../src/config/server-config.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Instruction {
  /** Upper-cased keyword: FROM, RUN, COPY, ... */
  keyword: string;
  /** Everything after the keyword, continuation lines joined with a space. */
  args: string;
  /** 1-based line of the keyword. */
  line: number;
}

/**
 * Instructions in order. Handles what this Dockerfile uses: comments, parser directives (skipped as
 * comments), blank lines, and backslash continuations (comment lines inside a continuation are
 * dropped, as docker does). Heredocs and a custom escape character are not supported.
 */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  let pending: { keyword: string; parts: string[]; line: number } | undefined;
  for (const [index, raw] of lines.entries()) {
    const trimmed = raw.trim();
    if (trimmed.startsWith('#')) continue;
    if (pending === undefined && trimmed === '') continue;
    const continues = trimmed.endsWith('\\');
    const body = continues ? trimmed.slice(0, -1).trim() : trimmed;
    if (pending === undefined) {
      const match = /^(\S+)\s*(.*)$/.exec(body);
      if (match === null) continue;
      pending = { keyword: match[1]!.toUpperCase(), parts: [match[2]!], line: index + 1 };
    } else if (body !== '') {
      pending.parts.push(body);
    }
    if (!continues) {
      out.push({ keyword: pending.keyword, args: pending.parts.join(' ').trim(), line: pending.line });
      pending = undefined;
    }
  }
  if (pending !== undefined) {
    out.push({ keyword: pending.keyword, args: pending.parts.join(' ').trim(), line: pending.line });
  }
  return out;
}

/** The final stage: the instructions after the last FROM. */
function finalStage(instructions: Instruction[]): Instruction[] {
  const last = instructions.map((i) => i.keyword).lastIndexOf('FROM');
  return instructions.slice(last);
}

/** A JSON-array (exec form) argument, or undefined for the shell form. */
function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  const parsed: unknown = JSON.parse(args);
  assert.ok(Array.isArray(parsed) && parsed.every((x) => typeof x === 'string'), `bad exec form: ${args}`);
  return parsed as string[];
}

/** Every rule; each returns the problems it finds (empty: the rule holds). */
export function lint(
  instructions: Instruction[],
  expected: { packages: string[]; port: number; exists: (path: string) => boolean },
): string[] {
  const problems: string[] = [];
  const stages = new Set<string>();
  for (const i of instructions) {
    if (i.keyword === 'FROM') {
      const [image, as, name] = i.args.split(/\s+/);
      if (as?.toUpperCase() === 'AS' && name) stages.add(name);
      if (stages.has(image ?? '')) continue;
      const tag = /^[^@]+:([^:/@]+)(@sha256:[0-9a-f]{64})?$/.exec(image ?? '')?.[1];
      if (tag === undefined && !image?.includes('@sha256:'))
        problems.push(`line ${i.line}: ${image} has no tag`);
      else if (tag === 'latest') problems.push(`line ${i.line}: ${image} is not pinned (latest)`);
    }
    if (i.keyword === 'ADD' && /https?:\/\//.test(i.args)) {
      problems.push(`line ${i.line}: ADD of a URL (fetch with a checked download instead)`);
    }
    if (i.keyword === 'RUN' && /apt-get\s+(-\S+\s+)*install/.test(i.args)) {
      if (!i.args.includes('--no-install-recommends')) {
        problems.push(`line ${i.line}: apt-get install without --no-install-recommends`);
      }
      if (!/apt-get\s+update/.test(i.args)) problems.push(`line ${i.line}: apt-get install without update`);
      if (!/rm -rf \/var\/lib\/apt\/lists/.test(i.args)) {
        problems.push(`line ${i.line}: apt lists are not removed in the same layer`);
      }
    }
    if (i.keyword === 'COPY' && !i.args.includes('--from=')) {
      const sources = (execForm(i.args) ?? i.args.split(/\s+/)).filter((s) => !s.startsWith('--'));
      for (const source of sources.slice(0, -1)) {
        if (!expected.exists(source)) problems.push(`line ${i.line}: COPY ${source}: not in the context`);
      }
    }
  }

  const final = finalStage(instructions);
  const cmdAt = final.findIndex((i) => i.keyword === 'CMD');
  const entryAt = final.findIndex((i) => i.keyword === 'ENTRYPOINT');
  const start = Math.min(...[cmdAt, entryAt].filter((n) => n >= 0));
  if (!Number.isFinite(start)) problems.push('the final stage has no CMD or ENTRYPOINT');
  const users = final
    .slice(0, Number.isFinite(start) ? start : final.length)
    .filter((i) => i.keyword === 'USER');
  const user = users.at(-1)?.args.split(':')[0];
  if (user === undefined) problems.push('no USER before CMD: the container would run as root');
  else if (user === 'root' || user === '0') problems.push(`USER ${user} before CMD is root`);

  const health = final.find((i) => i.keyword === 'HEALTHCHECK');
  if (health === undefined || /^NONE\b/i.test(health.args)) problems.push('no HEALTHCHECK');
  else if (!health.args.includes('/health')) problems.push('the HEALTHCHECK does not ask /health');

  const exposed = final
    .filter((i) => i.keyword === 'EXPOSE')
    .flatMap((i) => i.args.split(/\s+/))
    .map((p) => Number(p.split('/')[0]));
  if (!exposed.includes(expected.port)) problems.push(`EXPOSE ${exposed.join(' ')} misses ${expected.port}`);

  const installed = final
    .filter((i) => i.keyword === 'RUN')
    .flatMap((i) => {
      const match = /apt-get\s+install\s+(.*?)(?:&&|;|$)/.exec(i.args);
      return match ? match[1]!.split(/\s+/).filter((w) => w !== '' && !w.startsWith('-')) : [];
    })
    .sort();
  const want = [...expected.packages].sort();
  if (JSON.stringify(installed) !== JSON.stringify(want)) {
    problems.push(`apt-get installs [${installed.join(' ')}], expected [${want.join(' ')}]`);
  }
  return problems;
}

/** Whether a .dockerignore pattern list excludes a context path (the top-level patterns used here). */
function ignored(patterns: string[], path: string): boolean {
  const clean = path.replace(/^\.\//, '').replace(/\/$/, '');
  let out = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const p = (negated ? pattern.slice(1) : pattern).replace(/\/$/, '');
    const re = new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/.*)?$`);
    if (re.test(clean)) out = !negated;
  }
  return out;
}

const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
const dockerignore = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
// An .mjs outside the TypeScript project: its path is built at run time so tsc leaves it alone.
const packagesModule = join(REPO_ROOT, 'scripts', 'debian-packages.mjs');
const { RUNTIME_PACKAGES, TEST_PACKAGES } = (await import(packagesModule)) as {
  RUNTIME_PACKAGES: Record<string, string>;
  TEST_PACKAGES: Record<string, string>;
};

function defaultPort(): number {
  const dir = mkdtempSync(join(tmpdir(), 'voxd-dockerfile-'));
  try {
    const configPath = join(dir, 'server.json');
    writeFileSync(configPath, JSON.stringify({ ui_management: true }));
    const { config } = loadServerConfig({
      configPath,
      overrides: { models_root: join(dir, 'models') },
      knownFamilies: [],
    });
    return config.port;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const expected = {
  packages: Object.keys(RUNTIME_PACKAGES),
  port: defaultPort(),
  exists: (path: string) => existsSync(join(REPO_ROOT, path)) && !ignored(dockerignore, path),
};

describe('Dockerfile linted', () => {
  const instructions = parseDockerfile(dockerfile);

  test('the repository Dockerfile breaks none of the rules', () => {
    assert.deepEqual(lint(instructions, expected), []);
  });

  test('both stages start from node:20-bookworm-slim, and the image runs voxd serve on 0.0.0.0', () => {
    const froms = instructions.filter((i) => i.keyword === 'FROM').map((i) => i.args.split(/\s+/)[0]);
    assert.deepEqual(froms, ['node:20-bookworm-slim', 'node:20-bookworm-slim']);
    const final = finalStage(instructions);
    const entry = final.find((i) => i.keyword === 'ENTRYPOINT');
    const cmd = final.find((i) => i.keyword === 'CMD');
    assert.deepEqual(execForm(entry!.args), ['node', 'dist/src/cli/main.js']);
    assert.deepEqual(execForm(cmd!.args), ['serve', '--host', '0.0.0.0']);
    // The entry point is what tsc builds from src/cli/main.ts (this test runs from dist/test/deploy).
    assert.ok(existsSync(join(REPO_ROOT, 'dist/src/cli/main.js')));
    assert.ok(final.some((i) => i.keyword === 'VOLUME' && i.args.includes('/data')));
    assert.ok(final.some((i) => i.keyword === 'ENV' && /VOXD_DATA_DIR=\/data\b/.test(i.args)));
  });

  test('the test-only packages stay out of the image', () => {
    for (const name of Object.keys(TEST_PACKAGES)) {
      assert.ok(!new RegExp(`\\b${name}\\b`).test(dockerfile.replace(/#.*$/gm, '')), name);
    }
  });

  test('the parser joins continuations and skips comments inside them', () => {
    const parsed = parseDockerfile('# c\nFROM a:1\nRUN x \\\n  # inner\n  y\n\nUSER 1\n');
    assert.deepEqual(
      parsed.map((i) => [i.keyword, i.args, i.line]),
      [
        ['FROM', 'a:1', 2],
        ['RUN', 'x y', 3],
        ['USER', '1', 7],
      ],
    );
  });

  // Each case breaks one rule of a good file; the linter must name it.
  const good = [
    'FROM node:20-bookworm-slim AS build',
    'FROM node:20-bookworm-slim',
    `RUN apt-get update && apt-get install -y --no-install-recommends ${expected.packages.join(' ')} && rm -rf /var/lib/apt/lists/*`,
    'EXPOSE 8080',
    'USER 10001',
    'HEALTHCHECK CMD ["node", "-e", "fetch(\'http://127.0.0.1:8080/health\')"]',
    'CMD ["serve"]',
  ];
  const bad: [string, (lines: string[]) => string[], RegExp][] = [
    ['an unpinned base', (l) => l.with(1, 'FROM node:latest'), /not pinned/],
    ['an untagged base', (l) => l.with(1, 'FROM node'), /has no tag/],
    ['no USER', (l) => l.filter((x) => !x.startsWith('USER')), /no USER/],
    ['USER root', (l) => l.with(4, 'USER root'), /is root/],
    ['USER after CMD', (l) => [...l.filter((x) => !x.startsWith('USER')), 'USER 10001'], /no USER/],
    ['no HEALTHCHECK', (l) => l.filter((x) => !x.startsWith('HEALTHCHECK')), /no HEALTHCHECK/],
    ['ADD of a URL', (l) => [...l, 'ADD https://example.com/x.tgz /x'], /ADD of a URL/],
    ['recommends', (l) => l.with(2, l[2]!.replace('--no-install-recommends ', '')), /no-install-recommends/],
    ['lists kept', (l) => l.with(2, l[2]!.replace(/ && rm .*$/, '')), /apt lists/],
    ['a package short', (l) => l.with(2, l[2]!.replace(' ffmpeg', '')), /apt-get installs/],
    [
      'chromium in the image',
      (l) => l.with(2, l[2]!.replace('ffmpeg', 'ffmpeg chromium')),
      /apt-get installs/,
    ],
    ['another port', (l) => l.with(3, 'EXPOSE 9000'), /misses 8080/],
    ['a COPY of an ignored path', (l) => [...l, 'COPY node_modules ./node_modules'], /not in the context/],
  ];
  for (const [name, mutate, problem] of bad) {
    test(`the linter catches ${name}`, () => {
      assert.deepEqual(lint(parseDockerfile(good.join('\n')), expected), []);
      const problems = lint(parseDockerfile(mutate(good).join('\n')), expected);
      assert.ok(
        problems.some((p) => problem.test(p)),
        `expected ${problem}, got ${JSON.stringify(problems)}`,
      );
    });
  }
});
