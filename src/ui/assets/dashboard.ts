/**
 * The dashboard's only script, served as `/ui/static/app.js` (built by `scripts/build.ts`), so
 * the Content-Security-Policy can forbid every inline script. The pages work without it; it
 * adds copy buttons, typed confirmation, relative times kept current, and live updates by
 * polling JSON endpoints that answer server-rendered (escaped) fragments and log tails, version
 * suggestions that follow the chosen engine, and the folder upload (`folder-upload.ts`).
 */
import { setupFolderUpload } from "./folder-upload.ts";

/** What a page's live endpoint answers (`…/live.json`). */
type LiveAnswer = {
  /** Element id → its new inner HTML, rendered and escaped by the Worker. */
  fragments?: Record<string, string>;
  /** New log bytes per phase, as escaped HTML, and where the next read starts. */
  logs?: { phase: string; html: string; nextOffset: number }[];
  /** Nothing will change any more: stop polling. */
  done?: boolean;
};

const MAX_BACKOFF_MS = 30_000;
const RELATIVE_TIME_REFRESH_MS = 10_000;

/** The last fragment written into each element, so an unchanged one is not rewritten. */
const lastFragment = new WeakMap<Element, string>();

function select(element: Element): void {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  if (selection) {
    selection.removeAllRanges();
    selection.addRange(range);
  }
}

/** A copy button: copies its target's text, or selects it where the clipboard is not allowed. */
function setupCopy(button: HTMLButtonElement): void {
  button.hidden = false;
  button.addEventListener("click", () => {
    const target = document.getElementById(button.getAttribute("data-copy") ?? "");
    if (!target) {
      return;
    }
    const fallback = () => {
      select(target);
      button.textContent = "Selected: press Ctrl+C";
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(target.textContent ?? "").then(() => {
        button.textContent = "Copied";
      }, fallback);
    } else {
      fallback();
    }
  });
}

/** A form whose submit button stays disabled until the expected text is typed. */
function setupTypedConfirm(form: HTMLFormElement): void {
  const input = form.querySelector<HTMLInputElement>("input[data-expected]");
  const button = form.querySelector<HTMLButtonElement>("button[type=submit]");
  if (!input || !button) {
    return;
  }
  const update = () => {
    button.disabled = input.value !== input.getAttribute("data-expected");
  };
  input.addEventListener("input", update);
  update();
}

/** Writes a live answer into the page; log tails are appended, keeping the view at the bottom. */
function apply(data: LiveAnswer): void {
  const fragments = data.fragments ?? {};
  for (const [id, html] of Object.entries(fragments)) {
    const element = document.getElementById(id);
    if (element && lastFragment.get(element) !== html) {
      element.innerHTML = html;
      lastFragment.set(element, html);
    }
  }
  for (const log of data.logs ?? []) {
    const element = document.getElementById(`log-${log.phase}`);
    if (!element) {
      continue;
    }
    const atBottom = element.scrollTop + element.clientHeight >= element.scrollHeight - 8;
    if (log.html) {
      for (const placeholder of element.querySelectorAll("[data-placeholder]")) {
        placeholder.remove();
      }
      element.insertAdjacentHTML("beforeend", log.html);
    }
    element.setAttribute("data-offset", String(log.nextOffset));
    if (atBottom) {
      element.scrollTop = element.scrollHeight;
    }
  }
}

/**
 * Polls the element's `data-live` URL every `data-interval` ms (with each log's offset) until
 * the answer says it is done; failures back off exponentially, a 401 reloads (to sign in).
 */
function setupLive(root: HTMLElement): void {
  const url = root.getAttribute("data-live") ?? "";
  const intervalMs = Number(root.getAttribute("data-interval") ?? "2000");
  let failures = 0;
  const tick = () => {
    const next = new URL(url, window.location.href);
    for (const element of root.querySelectorAll("[data-log]")) {
      next.searchParams.set(
        `${element.getAttribute("data-log")}Offset`,
        element.getAttribute("data-offset") ?? "0",
      );
    }
    fetch(next, { headers: { accept: "application/json" }, credentials: "same-origin" })
      .then(async (res): Promise<LiveAnswer | null> => {
        if (res.status === 401) {
          window.location.reload();
          return null;
        }
        if (!res.ok) {
          throw new Error(`status ${res.status}`);
        }
        return (await res.json()) as LiveAnswer;
      })
      .then((data) => {
        if (!data) {
          return;
        }
        failures = 0;
        apply(data);
        if (!data.done) {
          window.setTimeout(tick, intervalMs);
        }
      })
      .catch(() => {
        failures += 1;
        window.setTimeout(tick, Math.min(MAX_BACKOFF_MS, intervalMs * 2 ** failures));
      });
  };
  window.setTimeout(tick, intervalMs);
}

/** "just now", "12 s ago", "5 min ago", "3 h ago", "2 d ago" (or "in …" for the future). */
function relative(iso: string): string {
  const diffMs = Date.now() - Date.parse(iso);
  const seconds = Math.round(Math.abs(diffMs) / 1000);
  if (!(seconds >= 5)) {
    return "just now";
  }
  const units: [number, string][] = [
    [86_400, "d"],
    [3_600, "h"],
    [60, "min"],
    [1, "s"],
  ];
  const [size, unit] = units.find(([size]) => seconds >= size) ?? [1, "s"];
  const text = `${Math.floor(seconds / size)} ${unit}`;
  return diffMs >= 0 ? `${text} ago` : `in ${text}`;
}

function refreshTimes(): void {
  for (const element of document.querySelectorAll("time[data-relative]")) {
    const iso = element.getAttribute("datetime");
    if (iso) {
      element.textContent = relative(iso);
    }
  }
}

window.setInterval(refreshTimes, RELATIVE_TIME_REFRESH_MS);
/** The version field suggests the chosen engine's versions: its list follows the engine select. */
function setupEngineVersions(engine: HTMLSelectElement): void {
  const input = document.getElementById(engine.getAttribute("data-version-input") ?? "");
  if (!(input instanceof HTMLInputElement)) {
    return;
  }
  engine.addEventListener("change", () => {
    input.setAttribute("list", `${input.getAttribute("data-list-prefix") ?? ""}${engine.value}`);
  });
}

document.querySelectorAll<HTMLButtonElement>("button[data-copy]").forEach(setupCopy);
document
  .querySelectorAll<HTMLSelectElement>("select[data-version-input]")
  .forEach(setupEngineVersions);
document.querySelectorAll<HTMLFormElement>("form[data-folder-upload]").forEach(setupFolderUpload);
document.querySelectorAll<HTMLFormElement>("form[data-typed-confirm]").forEach(setupTypedConfirm);
document.querySelectorAll<HTMLElement>("[data-live]").forEach(setupLive);
// A log is read from its end (the "Plan:" and "Apply complete!" lines): open it scrolled there.
for (const log of document.querySelectorAll<HTMLElement>("pre.log[data-log]")) {
  log.scrollTop = log.scrollHeight;
}
