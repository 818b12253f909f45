import { z } from "zod";

/** A host (an IPv6 address without its brackets) and a TCP port to listen on. */
export type ListenAddress = { host: string; port: number };

const LISTEN = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})$/;
const MESSAGE = "must be HOST:PORT, e.g. 0.0.0.0:9464, 127.0.0.1:9464 or [::]:9464";

/**
 * `HOST:PORT` with a name, an IPv4 address or a bracketed IPv6 address and a port from 0 to
 * 65535 (0 lets the system choose; the agent logs the address it got). Anything else is one
 * zod issue saying the expected form.
 */
export function parseListenAddress(text: string, ctx: z.RefinementCtx): ListenAddress {
  const match = LISTEN.exec(text.trim());
  const port = Number(match?.[2]);
  if (!match?.[1] || !Number.isInteger(port) || port > 65_535) {
    ctx.addIssue({ code: "custom", message: MESSAGE });
    return z.NEVER;
  }
  return { host: match[1].replace(/^\[(.*)\]$/, "$1"), port };
}

/** `host:port` as a URL authority (IPv6 in brackets). */
export function formatListenAddress(address: ListenAddress): string {
  return address.host.includes(":")
    ? `[${address.host}]:${address.port}`
    : `${address.host}:${address.port}`;
}
