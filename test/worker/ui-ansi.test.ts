/** ANSI SGR parsing for the log view: a fixed set of classes out, every other escape dropped. */
import { describe, expect, it } from "vitest";
import { nearestPaletteIndex, paletteCss, paletteRgb, parseAnsi } from "../../src/ui/ansi.ts";

const E = "\u001b";

describe("parseAnsi", () => {
  it.each([
    ["plain", "hello", [{ text: "hello", classes: "" }]],
    [
      "colour and reset",
      `${E}[31merr${E}[0m ok`,
      [
        { text: "err", classes: "ansi-fg-1" },
        { text: " ok", classes: "" },
      ],
    ],
    ["bold bright", `${E}[1;92mgo`, [{ text: "go", classes: "ansi-fg-10 ansi-bold" }]],
    ["background", `${E}[44mbg${E}[49m`, [{ text: "bg", classes: "ansi-bg-4" }]],
    [
      "empty params reset",
      `${E}[4mu${E}[mn`,
      [
        { text: "u", classes: "ansi-underline" },
        { text: "n", classes: "" },
      ],
    ],
    ["256 colour", `${E}[38;5;196mx`, [{ text: "x", classes: "ansi-fg-196" }]],
    ["256 colour background", `${E}[48;5;21my`, [{ text: "y", classes: "ansi-bg-21" }]],
    [
      "truecolour to the nearest palette entry",
      `${E}[38;2;255;0;0;1mx`,
      [{ text: "x", classes: "ansi-fg-196 ansi-bold" }],
    ],
    ["truecolour background", `${E}[48;2;8;8;8my`, [{ text: "y", classes: "ansi-bg-232" }]],
    ["decorations", `${E}[9;3;2mz`, [{ text: "z", classes: "ansi-dim ansi-italic ansi-strike" }]],
    ["cursor moves dropped", `a${E}[2Kb${E}[1Gc`, [{ text: "abc", classes: "" }]],
    ["OSC title dropped", `${E}]0;title\u0007text`, [{ text: "text", classes: "" }]],
    ["markup stays text", "<b>x</b>", [{ text: "<b>x</b>", classes: "" }]],
  ])("%s", (_name, input, expected) => {
    expect(parseAnsi(input)).toEqual(expected);
  });
});

describe("the 256-colour palette", () => {
  it("is xterm's: a 6×6×6 cube then 24 greys", () => {
    expect(paletteRgb(16)).toEqual([0, 0, 0]);
    expect(paletteRgb(196)).toEqual([255, 0, 0]);
    expect(paletteRgb(231)).toEqual([255, 255, 255]);
    expect(paletteRgb(232)).toEqual([8, 8, 8]);
    expect(paletteRgb(255)).toEqual([238, 238, 238]);
    expect(nearestPaletteIndex(250, 5, 5)).toBe(196);
    expect(nearestPaletteIndex(130, 130, 130)).toBe(244);
  });

  it("has a rule for every class parseAnsi can emit, and nothing else", () => {
    const css = paletteCss();
    expect(css).toContain(".ansi-fg-196{color:#ff0000}");
    expect(css).toContain(".ansi-bg-255{background:#eeeeee}");
    expect(css.split("\n")).toHaveLength(240);
  });
});
