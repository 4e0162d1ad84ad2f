/**
 * Headless Chromium (Debian's `chromium`, never a downloaded build) for browser tests, driven by
 * playwright-core. One browser per test file (`useBrowser()` or `withBrowser(fn)`), a deadline on
 * every wait, console and page errors collected (an uncaught page error fails the test), screenshots
 * on demand, and the browser always closed: killed by pid when a close hangs.
 */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, afterEach, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, type BrowserServer, chromium, type Page } from 'playwright-core';
import { withDeadline } from './voxd.js';

/** Debian's chromium (`npm test`'s set-up installs it as root); VOXD_CHROMIUM points elsewhere. */
export const CHROMIUM_PATH = process.env['VOXD_CHROMIUM'] ?? '/usr/bin/chromium';

/**
 * What headless Chromium needs as root in a container without a display: no sandbox (root; Playwright
 * adds it too unless asked for the sandbox), /tmp instead of /dev/shm (64 MB in a default Docker
 * container), a fake microphone (without it getUserMedia fails with NotFoundError) granted without a
 * prompt (else NotAllowedError), and autoplay without a user gesture, for the microphone and playback
 * tests to come. Playwright adds `--headless` itself: the new headless mode, the only one Chromium
 * ships since 132, so `--headless=new` is not needed.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-dev-shm-usage',
  '--use-fake-ui-for-media-stream',
  '--use-fake-device-for-media-stream',
  '--autoplay-policy=no-user-gesture-required',
];

/** The deadline of every wait in a page (navigation, selectors, actions). */
export const WAIT_MS = 10_000;
const LAUNCH_MS = 30_000;
const CLOSE_MS = 5_000;

/** Where `screenshot()` writes: docs/images with VOXD_SCREENSHOTS=1, else one temp folder per process. */
const DOCS_IMAGES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../docs/images');
let tempShots: string | undefined;
function screenshotDir(): string {
  if (process.env['VOXD_SCREENSHOTS'] === '1') {
    mkdirSync(DOCS_IMAGES, { recursive: true });
    return DOCS_IMAGES;
  }
  tempShots ??= mkdtempSync(join(tmpdir(), 'voxd-screenshots-'));
  return tempShots;
}

export interface OpenedPage {
  page: Page;
  /** Uncaught exceptions in the page; any left here fails the test when the browser closes. */
  pageErrors: Error[];
  /** Console messages of type error, with their source URL (failed loads included, the favicon's not). */
  consoleErrors: string[];
  /** Forgets the page errors seen so far (for a test that provokes one on purpose). */
  acceptPageErrors(): Error[];
}

export interface TestBrowser {
  /** Milliseconds from launch to a connected browser. */
  launchMs: number;
  /** The browser's process id (its process group's id too). */
  pid: number | undefined;
  /** How the last close ended: 'closed', or 'killed' when closing hung past its deadline. */
  readonly closedBy: 'closed' | 'killed' | undefined;
  /** Opens `url` in a fresh context (no shared cookies or storage) and waits for its load event. */
  openPage(url: string): Promise<OpenedPage>;
  /** Throws if any page has an uncaught error nobody accepted (and forgets them). */
  checkPageErrors(): void;
  /** Closes the browser (killing it by pid if that hangs) and throws if a page had an uncaught error. */
  close(): Promise<void>;
}

export interface LaunchOptions {
  /**
   * Chromium flags added to CHROMIUM_ARGS, such as `--use-file-for-fake-audio-capture=<wav>` for a
   * fake microphone that says something (Chromium loops the file).
   */
  extraArgs?: string[];
}

/** Launches Debian's chromium; fails (never skips) when it is not installed. */
export async function launchBrowser(
  executablePath = CHROMIUM_PATH,
  options: LaunchOptions = {},
): Promise<TestBrowser> {
  if (!existsSync(executablePath)) {
    throw new Error(
      `browser tests need Debian's chromium at ${executablePath}, which is missing: run \`npm test\` (or \`node scripts/setup.mjs --for-tests\`) as root, whose set-up installs it with apt-get`,
    );
  }
  const started = performance.now();
  // A browser server, not chromium.launch(): it exposes the browser's process, to kill it by pid.
  const server: BrowserServer = await chromium.launchServer({
    executablePath,
    args: [...CHROMIUM_ARGS, ...(options.extraArgs ?? [])],
    headless: true,
    timeout: LAUNCH_MS,
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
  let browser: Awaited<ReturnType<typeof chromium.connect>>;
  try {
    browser = await chromium.connect(server.wsEndpoint(), { timeout: LAUNCH_MS });
  } catch (err) {
    await killServer(server);
    throw err;
  }
  const launchMs = Math.round(performance.now() - started);
  const contexts: BrowserContext[] = [];
  const opened: OpenedPage[] = [];
  let closing: Promise<void> | undefined;
  let closedBy: TestBrowser['closedBy'];

  const openPage = async (url: string): Promise<OpenedPage> => {
    const context = await browser.newContext();
    contexts.push(context);
    context.setDefaultTimeout(WAIT_MS);
    context.setDefaultNavigationTimeout(WAIT_MS);
    const page = await context.newPage();
    const result: OpenedPage = {
      page,
      pageErrors: [],
      consoleErrors: [],
      acceptPageErrors: () => result.pageErrors.splice(0),
    };
    page.on('pageerror', (err) => result.pageErrors.push(err));
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      const source = message.location().url;
      // Chromium asks every origin for /favicon.ico on its own; voxd's 404 for it is no page error.
      if (source.endsWith('/favicon.ico')) return;
      result.consoleErrors.push(source ? `${message.text()} (${source})` : message.text());
    });
    opened.push(result);
    await page.goto(url, { waitUntil: 'load', timeout: WAIT_MS });
    return result;
  };

  const checkPageErrors = (): void => {
    const errors = opened.flatMap((p) => p.acceptPageErrors());
    if (errors.length > 0) {
      throw new Error(
        `uncaught page error${errors.length > 1 ? 's' : ''}: ${errors.map((e) => e.stack ?? e.message).join('\n')}`,
      );
    }
  };

  const close = (): Promise<void> => {
    closing ??= (async () => {
      try {
        await withDeadline(
          (async () => {
            for (const context of contexts) await context.close();
            await browser.close();
            await server.close();
          })(),
          'the browser to close',
          CLOSE_MS,
        );
        closedBy = 'closed';
      } catch {
        await killServer(server);
        closedBy = 'killed';
      }
      checkPageErrors();
    })();
    return closing;
  };

  return {
    launchMs,
    pid: server.process().pid,
    get closedBy() {
      return closedBy;
    },
    openPage,
    checkPageErrors,
    close,
  };
}

/** Kills the browser's process group (chromium and its renderers, zygote and GPU processes). */
async function killServer(server: BrowserServer): Promise<void> {
  const pid = server.process().pid;
  if (pid !== undefined) {
    try {
      // Playwright starts the browser detached, in its own process group.
      process.kill(-pid, 'SIGKILL');
    } catch {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
  await withDeadline(server.kill(), 'the killed browser to exit', CLOSE_MS).catch(() => undefined);
}

/** Runs `fn` with a browser of its own, closed afterwards whatever happens. */
export async function withBrowser<T>(fn: (browser: TestBrowser) => Promise<T>): Promise<T> {
  const browser = await launchBrowser();
  let result: T;
  try {
    result = await fn(browser);
  } catch (err) {
    // The test's own failure matters more than one while closing.
    await browser.close().catch(() => undefined);
    throw err;
  }
  await browser.close();
  return result;
}

/**
 * One browser for the whole test file: launched in a `before` hook, closed in an `after` hook. An
 * `afterEach` hook fails the test whose pages had an uncaught error it did not accept. Call at the
 * top level of a test file. A failed launch (chromium missing) fails every test that calls `get()`:
 * the hook itself does not throw, since Node 20 then skips the file's other hooks, and a server
 * started by one of them would keep the test process alive.
 */
export function useBrowser(): { get(): TestBrowser } {
  let browser: TestBrowser | undefined;
  let launchError: unknown;
  before(async () => {
    try {
      browser = await launchBrowser();
    } catch (err) {
      launchError = err;
    }
  });
  afterEach(() => {
    browser?.checkPageErrors();
  });
  after(async () => {
    await browser?.close();
  });
  return {
    get: () => {
      if (launchError) throw launchError;
      if (!browser) throw new Error('the browser is not launched yet (use it inside a test)');
      return browser;
    },
  };
}

/** Saves a PNG of the page as `<name>.png` and returns its path (docs/images with VOXD_SCREENSHOTS=1). */
export async function screenshot(page: Page, name: string): Promise<string> {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new Error(`screenshot name must be kebab-case: ${name}`);
  const path = join(screenshotDir(), `${name}.png`);
  await page.screenshot({ path, fullPage: true, timeout: WAIT_MS });
  return path;
}

/** The text of a JSON document as Chromium shows it (in a `<pre>`), parsed. */
export async function pageJson(page: Page): Promise<unknown> {
  const text = await page.locator('pre').first().textContent({ timeout: WAIT_MS });
  if (text === null) throw new Error(`no JSON text on ${page.url()}`);
  return JSON.parse(text);
}
