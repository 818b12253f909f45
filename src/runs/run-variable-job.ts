/**
 * How one of a run's own variables (a `-var` value, an HCL expression) reaches its job: always a
 * sensitive Terraform variable; a plain quoted string decoded and not HCL, so the agent's masker
 * (which masks each sensitive value's exact text) hides the bare value however it is printed.
 * Free of Worker-only imports so the agent's tests can check the masking end to end.
 */

import type { JobVariable } from "@outpost/protocol";

/** One variable: an identifier and its value as an HCL expression (`"text"`, `3`, `["a"]`). */
export type RunVariable = { key: string; value: string };

/** The job variable a run variable becomes: sensitive; HCL unless it is a plain string literal. */
export function runJobVariable(variable: RunVariable): JobVariable {
  const text = hclStringLiteral(variable.value);
  return {
    key: variable.key,
    value: text ?? variable.value,
    category: "terraform",
    isHcl: text === undefined,
    isSensitive: true,
  };
}

const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\" };

/**
 * The text of an HCL expression that is a plain quoted string literal (escapes `\n \r \t \" \\
 * \uNNNN \UNNNNNNNN` decoded), undefined for anything else: a number, a list, a malformed literal
 * or one holding `${`/`%{` (a template, or its `$${` escape: both stay HCL, simplest to get right).
 */
export function hclStringLiteral(expression: string): string | undefined {
  const literal = expression.trim();
  if (literal.length < 2 || !literal.startsWith('"') || !literal.endsWith('"')) {
    return undefined;
  }
  const body = literal.slice(1, -1);
  let text = "";
  let i = 0;
  while (i < body.length) {
    const ch = body.charAt(i);
    const next = body.charAt(i + 1);
    if (ch === '"' || ch === "\n" || ch === "\r") {
      return undefined;
    }
    if (ch === "\\") {
      const unicode = next === "u" ? 4 : next === "U" ? 8 : 0;
      if (unicode > 0) {
        const hex = body.slice(i + 2, i + 2 + unicode);
        const code =
          /^[0-9a-fA-F]+$/.test(hex) && hex.length === unicode ? Number.parseInt(hex, 16) : -1;
        if (code < 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
          return undefined;
        }
        text += String.fromCodePoint(code);
        i += 2 + unicode;
        continue;
      }
      const escaped = ESCAPES[next];
      if (escaped === undefined) {
        return undefined;
      }
      text += escaped;
      i += 2;
      continue;
    }
    if ((ch === "$" || ch === "%") && next === "{") {
      return undefined;
    }
    text += ch;
    i += 1;
  }
  return text;
}
