/**
 * Debian's chromium driven by playwright-core for the dashboard tests: a fresh profile per launch,
 * every wait bounded, screenshots under test-results/screenshots/, and a record of page errors,
 * CSP violations and console errors so a test can assert there were none.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { expect, vi } from "vitest";

export const CHROMIUM = "/usr/bin/chromium";
export const SCREENSHOTS = path.resolve(import.meta.dirname, "../../test-results/screenshots");

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
];

export type Browser = {
  context: BrowserContext;
  /** Page errors, console errors and CSP violations seen so far, in order. */
  problems: string[];
  newPage(): Promise<Page>;
  close(): Promise<void>;
};

/** Launches chromium with a fresh profile; `javaScriptEnabled: false` for no-script checks. */
export async function launch(options: { javaScriptEnabled?: boolean } = {}): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), "outpost-chromium-"));
  // The profile dir is passed here: playwright adds --user-data-dir itself for persistent contexts.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    viewport: { width: 1280, height: 900 },
    timeout: 60_000,
  });
  context.setDefaultTimeout(20_000);
  const problems: string[] = [];
  const watch = (page: Page) => {
    page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
    page.on("console", (msg) => {
      if (msg.type() === "error") {
        problems.push(`console: ${msg.text()}`);
      }
    });
  };
  context.on("page", watch);
  for (const page of context.pages()) {
    watch(page);
  }
  return {
    context,
    problems,
    newPage: () => context.newPage(),
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The widths every page is checked and photographed at: a laptop and a 390 px phone. */
export const WIDTHS = [
  { label: "desktop", width: 1280, height: 900 },
  { label: "phone", width: 390, height: 844 },
] as const;

/**
 * The visible buttons, links and fields of `main` whose box ends past the viewport's right edge
 * or past the visible part of a box that scrolls or clips (a table scrolled sideways hides them).
 */
const OFFSCREEN_ACTIONS = `(() => {
  const right = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll("main button, main a, main input, main select")) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0 || el.type === "hidden") continue;
    let limit = right;
    for (let up = el.parentElement; up; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (style.overflowX !== "visible" && up.tagName !== "PRE") {
        limit = Math.min(limit, up.getBoundingClientRect().right);
      }
    }
    if (box.right > limit + 1) out.push((el.textContent || el.getAttribute("name") || el.tagName).trim().slice(0, 40));
  }
  return out;
})()`;

/**
 * The log boxes of the page that are not scrolled to their end (a box shows its tail: the
 * "Plan:" and "Apply complete!" lines), by id.
 */
export const LOGS_NOT_AT_TAIL = `[...document.querySelectorAll("pre.log[data-log]")]
  .filter((el) => el.scrollHeight > el.clientHeight && el.scrollTop + el.clientHeight < el.scrollHeight - 8)
  .map((el) => el.id)`;

/**
 * Checks the page is in standards mode and has no horizontal page scroll at desktop and phone
 * widths (wide tables scroll inside their own box), and saves a full-page screenshot of each as
 * test-results/screenshots/<name>-desktop.png and -phone.png. Throws naming the width that
 * overflowed, and by how many pixels.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const mode = await page.evaluate<string>("document.compatMode");
  if (mode !== "CSS1Compat") {
    throw new Error(`${name}: the page renders in ${mode} (quirks mode), not standards mode`);
  }
  const original = page.viewportSize();
  try {
    for (const { label, width, height } of WIDTHS) {
      await page.setViewportSize({ width, height });
      const overflow = await page.evaluate<number>(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth",
      );
      if (overflow > 0) {
        throw new Error(`${name}: the page scrolls sideways by ${overflow} px at ${width} px wide`);
      }
      const offscreen = await page.evaluate<string[]>(OFFSCREEN_ACTIONS);
      if (offscreen.length > 0) {
        throw new Error(`${name}: at ${width} px these actions are off-screen: ${offscreen}`);
      }
      await page.screenshot({
        path: path.join(SCREENSHOTS, `${name}-${label}.png`),
        fullPage: true,
      });
    }
  } finally {
    if (original) {
      await page.setViewportSize(original);
    }
  }
}

/** Waits (bounded) until the element's text matches, and returns that text. */
export async function waitForText(
  page: Page,
  selector: string,
  pattern: RegExp,
  timeoutMs = 30_000,
): Promise<string> {
  return vi.waitFor(
    async () => {
      const text = (await page.locator(selector).first().textContent({ timeout: 5_000 })) ?? "";
      expect(text, `the text of ${selector}`).toMatch(pattern);
      return text;
    },
    { timeout: timeoutMs, interval: 200 },
  );
}
