/**
 * The dashboard's only script and stylesheet, served by the Worker from `/ui/static/` so the
 * Content-Security-Policy can forbid every inline script and style. The pages work without the
 * script; it adds copy buttons, typed confirmation and live updates by polling JSON endpoints
 * that answer server-rendered (escaped) fragments.
 */

import { paletteCss } from "./ansi.ts";

export const APP_JS = `"use strict";
(function () {
  function setupCopy(button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var target = document.getElementById(button.getAttribute("data-copy"));
      if (!target) return;
      var text = target.textContent || "";
      var done = function (label) { button.textContent = label; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { done("Copied"); }, function () { select(target); done("Selected: press Ctrl+C"); });
      } else { select(target); done("Selected: press Ctrl+C"); }
    });
  }
  function select(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    if (sel) { sel.removeAllRanges(); sel.addRange(range); }
  }
  function setupTypedConfirm(form) {
    var input = form.querySelector("input[data-expected]");
    var button = form.querySelector("button[type=submit]");
    if (!input || !button) return;
    var update = function () { button.disabled = input.value !== input.getAttribute("data-expected"); };
    input.addEventListener("input", update);
    update();
  }
  var last = new WeakMap();
  function setupLive(root) {
    var url = root.getAttribute("data-live");
    var interval = Number(root.getAttribute("data-interval") || "2000");
    var failures = 0;
    function tick() {
      var u = new URL(url, window.location.href);
      root.querySelectorAll("[data-log]").forEach(function (el) {
        u.searchParams.set(el.getAttribute("data-log") + "Offset", el.getAttribute("data-offset") || "0");
      });
      fetch(u.toString(), { headers: { accept: "application/json" }, credentials: "same-origin" })
        .then(function (res) {
          if (res.status === 401) { window.location.reload(); return null; }
          if (!res.ok) throw new Error("status " + res.status);
          return res.json();
        })
        .then(function (data) {
          if (!data) return;
          failures = 0;
          var fragments = data.fragments || {};
          Object.keys(fragments).forEach(function (id) {
            var el = document.getElementById(id);
            if (el && last.get(el) !== fragments[id]) { el.innerHTML = fragments[id]; last.set(el, fragments[id]); }
          });
          (data.logs || []).forEach(function (log) {
            var el = document.getElementById("log-" + log.phase);
            if (!el) return;
            var atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
            if (log.html) {
              el.querySelectorAll("[data-placeholder]").forEach(function (p) { p.remove(); });
              el.insertAdjacentHTML("beforeend", log.html);
            }
            el.setAttribute("data-offset", String(log.nextOffset));
            if (atBottom) el.scrollTop = el.scrollHeight;
          });
          if (!data.done) window.setTimeout(tick, interval);
        })
        .catch(function () {
          failures += 1;
          window.setTimeout(tick, Math.min(30000, interval * Math.pow(2, failures)));
        });
    }
    window.setTimeout(tick, interval);
  }
  function relative(iso) {
    var diff = Date.now() - Date.parse(iso);
    var s = Math.round(Math.abs(diff) / 1000);
    if (!(s >= 5)) return "just now";
    var units = [[86400, "d"], [3600, "h"], [60, "min"], [1, "s"]];
    for (var i = 0; i < units.length; i++) {
      if (s >= units[i][0]) {
        var text = Math.floor(s / units[i][0]) + " " + units[i][1];
        return diff >= 0 ? text + " ago" : "in " + text;
      }
    }
    return "just now";
  }
  function refreshTimes() {
    document.querySelectorAll("time[data-relative]").forEach(function (el) {
      var iso = el.getAttribute("datetime");
      if (iso) el.textContent = relative(iso);
    });
  }
  window.setInterval(refreshTimes, 10000);
  document.querySelectorAll("button[data-copy]").forEach(setupCopy);
  document.querySelectorAll("form[data-typed-confirm]").forEach(setupTypedConfirm);
  document.querySelectorAll("[data-live]").forEach(setupLive);
})();
`;

export const APP_CSS = `
:root { --fg: #1b1f24; --muted: #4a535e; --bg: #ffffff; --panel: #f4f6f8; --line: #cfd6dd;
  --accent: #0b57b0; --danger: #a4161a; --ok: #1a6b2f; --warn: #7a4d00; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; z-index: 10; }
header.top { display: flex; align-items: center; gap: 24px; padding: 10px 24px; background: #14213d; color: #fff; }
header.top a { color: #fff; text-decoration: none; font-weight: 600; }
header.top nav ul { list-style: none; display: flex; gap: 18px; margin: 0; padding: 0; }
header.top nav a[aria-current=page] { text-decoration: underline; text-underline-offset: 4px; }
header.top .who { margin-left: auto; display: flex; align-items: center; gap: 12px; font-size: 14px; }
header.top .who button { background: transparent; color: #fff; border: 1px solid #fff; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 24px; margin: 12px 0 16px; } h2 { font-size: 18px; margin: 28px 0 10px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
form.inline { display: inline; }
fieldset { border: 1px solid var(--line); padding: 12px; margin: 12px 0; }
label { display: block; font-weight: 600; margin: 6px 0 2px; }
label.check { display: inline-flex; gap: 6px; font-weight: 400; align-items: center; }
input, select, textarea { font: inherit; padding: 5px 8px; border: 1px solid #6b7682; border-radius: 3px; color: var(--fg); background: #fff; }
button, a.button { font: inherit; padding: 5px 12px; border-radius: 3px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
a.button { display: inline-block; text-decoration: none; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); }
button:disabled { opacity: .55; cursor: not-allowed; }
.row { display: flex; gap: 12px; align-items: end; flex-wrap: wrap; }
.muted { color: var(--muted); }
.notice { padding: 10px 14px; border-left: 4px solid var(--accent); background: #eaf2fc; margin: 12px 0; }
.notice.error { border-color: var(--danger); background: #fcecec; }
.notice.ok { border-color: var(--ok); background: #e9f6ec; }
.secret { display: flex; gap: 8px; align-items: center; margin: 6px 0; }
.secret pre { margin: 0; padding: 8px; background: var(--panel); border: 1px solid var(--line); white-space: pre-wrap; word-break: break-all; flex: 1; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 13px; font-weight: 600; border: 1px solid currentColor; }
.status-idle, .status-applied, .status-planned_and_finished { color: var(--ok); }
.status-busy, .status-planning, .status-applying, .status-confirmed { color: var(--accent); }
.status-unknown, .status-pending, .status-plan_queued, .status-apply_queued, .status-planned { color: var(--warn); }
.status-errored, .status-canceled, .status-force_canceled, .status-discarded { color: var(--danger); }
.status-exited { color: var(--muted); }
ol.timeline { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 6px 18px; }
ol.timeline li { padding-left: 14px; position: relative; }
ol.timeline li::before { content: ""; position: absolute; left: 0; top: 8px; width: 8px; height: 8px; border-radius: 50%; background: var(--muted); }
ol.timeline li.current::before { background: var(--accent); }
pre.log { background: #0f141a; color: #e6e6e6; padding: 12px; max-height: 460px; overflow: auto; white-space: pre-wrap; word-break: break-word; margin: 6px 0; min-height: 3em; }
.ansi-bold { font-weight: 700; } .ansi-dim { opacity: .75; } .ansi-italic { font-style: italic; } .ansi-underline { text-decoration: underline; } .ansi-strike { text-decoration: line-through; }
.ansi-fg-0 { color: #8b949e; } .ansi-fg-1 { color: #ff7b72; } .ansi-fg-2 { color: #7ee787; } .ansi-fg-3 { color: #e3b341; }
.ansi-fg-4 { color: #79c0ff; } .ansi-fg-5 { color: #d2a8ff; } .ansi-fg-6 { color: #56d4dd; } .ansi-fg-7 { color: #e6e6e6; }
.ansi-fg-8 { color: #a0a8b0; } .ansi-fg-9 { color: #ffa198; } .ansi-fg-10 { color: #aff5b4; } .ansi-fg-11 { color: #f8e3a1; }
.ansi-fg-12 { color: #a5d6ff; } .ansi-fg-13 { color: #e2c5ff; } .ansi-fg-14 { color: #b3f0ff; } .ansi-fg-15 { color: #ffffff; }
.ansi-bg-0 { background: #000; } .ansi-bg-1 { background: #6e1c1c; } .ansi-bg-2 { background: #1c4d26; } .ansi-bg-3 { background: #5c4a12; }
.ansi-bg-4 { background: #1c3a6e; } .ansi-bg-5 { background: #4d2466; } .ansi-bg-6 { background: #145458; } .ansi-bg-7 { background: #5a5a5a; }
.ansi-bg-8 { background: #333; } .ansi-bg-9 { background: #8e2a2a; } .ansi-bg-10 { background: #2a6e38; } .ansi-bg-11 { background: #7a6419; }
.ansi-bg-12 { background: #2a4f8e; } .ansi-bg-13 { background: #6a3388; } .ansi-bg-14 { background: #1d7075; } .ansi-bg-15 { background: #777; }
${paletteCss()}
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 8px 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
.login { max-width: 460px; margin: 80px auto; }
.login input { width: 100%; }
/* Ids and URLs are long unbroken words: let them wrap rather than widen the page on a phone. */
h1, h2, p, dd, li, label, .notice, .who span { overflow-wrap: anywhere; }
.table-scroll { overflow-x: auto; max-width: 100%; }
.table-scroll table { margin: 0; }
pre.value { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 240px; overflow: auto; }
.mono { overflow-wrap: anywhere; }
td .mono, td a, td time { overflow-wrap: normal; }
form.rollback { margin-top: 6px; }
tr.change-added td:nth-child(2) { color: var(--ok); } tr.change-removed td:nth-child(2) { color: var(--danger); }
tr.change-changed td:nth-child(2) { color: var(--warn); font-weight: 600; }
.log-placeholder { color: #b8c0c8; font-style: italic; }
.pool-counts { display: flex; flex-wrap: wrap; gap: 4px 10px; }
@media (max-width: 700px) {
  header.top { flex-wrap: wrap; gap: 8px 16px; padding: 10px 12px; }
  header.top nav ul { flex-wrap: wrap; gap: 8px 14px; }
  header.top .who { margin-left: 0; flex-wrap: wrap; }
  main { padding: 12px 12px 40px; }
  table { display: block; overflow-x: auto; max-width: 100%; }
  td, th { white-space: nowrap; }
  td pre.value { white-space: pre-wrap; min-width: 16em; }
  .table-scroll table { display: table; }
  dl.facts { grid-template-columns: 1fr; gap: 0 0; } dl.facts dd { margin-bottom: 6px; }
  input, select, textarea { max-width: 100%; }
  /* A fieldset is as wide as its widest field by default, and so is a flex item: not on a phone. */
  fieldset { min-width: 0; } .row > * { min-width: 0; max-width: 100%; } textarea { width: 100%; }
  .secret { flex-wrap: wrap; }
}
`;

/** A small mark for the tab, so the browser does not ask for /favicon.ico. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#14213d"/><path d="M4 12 8 3l4 9z" fill="#f2a900"/></svg>`;
