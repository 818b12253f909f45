/**
 * The Worker's bindings with two counters, to prove what a request costs: every D1 statement it
 * prepares (each executed statement, alone or in a batch, is prepared once) and every call it
 * makes to an AgentPool object. The real D1 and the real objects answer; nothing is stubbed.
 */
import { env } from "cloudflare:workers";

export type Counted = {
  env: Env;
  /** The SQL of every statement prepared, in order. */
  statements: string[];
  /** `<pool name>.<method>` of every call to a pool object, in order. */
  poolCalls: string[];
};

/** Fresh counters over the test's bindings. */
export function countingEnv(): Counted {
  const statements: string[] = [];
  const poolCalls: string[] = [];
  const db = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "prepare") {
        return (query: string) => {
          statements.push(query);
          return target.prepare(query);
        };
      }
      if (prop === "exec") {
        return (query: string) => {
          statements.push(query);
          return target.exec(query);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const pools = new Proxy(env.AGENT_POOL, {
    get(target, prop) {
      if (prop === "getByName") {
        return (name: string) => {
          const stub = target.getByName(name);
          return new Proxy(stub, {
            get(s, method) {
              const value = Reflect.get(s, method, s);
              if (typeof value !== "function" || typeof method !== "string") {
                return value;
              }
              return (...args: unknown[]) => {
                poolCalls.push(`${name}.${method}`);
                return Reflect.apply(value, s, args);
              };
            },
          });
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { env: { ...env, DB: db, AGENT_POOL: pools }, statements, poolCalls };
}
