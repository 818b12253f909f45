/** ANSI SGR parsing for the log view: a fixed set of classes out, every other escape dropped. */
import { describe, expect, it } from "vitest";
import { parseAnsi } from "../../src/ui/ansi.ts";

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
    ["256 colour skipped", `${E}[38;5;196mx`, [{ text: "x", classes: "" }]],
    ["truecolour skipped", `${E}[38;2;1;2;3;1mx`, [{ text: "x", classes: "ansi-bold" }]],
    ["cursor moves dropped", `a${E}[2Kb${E}[1Gc`, [{ text: "abc", classes: "" }]],
    ["OSC title dropped", `${E}]0;title\u0007text`, [{ text: "text", classes: "" }]],
    ["markup stays text", "<b>x</b>", [{ text: "<b>x</b>", classes: "" }]],
  ])("%s", (_name, input, expected) => {
    expect(parseAnsi(input)).toEqual(expected);
  });
});
