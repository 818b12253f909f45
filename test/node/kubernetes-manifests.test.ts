/**
 * deploy/kubernetes as `kubectl kustomize` renders it: every object validates against the
 * Kubernetes schemas (kubernetes-models: runtime validation and its types' unknown-field
 * check) or KEDA's CRD schema (test/fixtures/keda, ajv, unknown fields refused); the agent's
 * own configuration loader accepts each container's environment and arguments; and each
 * overlay does what docs/operations.md says.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentConfig, loadConfig } from "../../agent/src/config/load.ts";
import { SETTINGS, TOKEN_ENV } from "../../agent/src/config/settings.ts";
import {
  type CrdValidator,
  crdValidator,
  type KubeObject,
  kustomize,
  typeCheckWithModels,
  validateWithModel,
} from "./helpers/kubernetes.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DEPLOY = path.join(ROOT, "deploy/kubernetes");
const OVERLAYS = ["base", "overlays/keda-scaledobject", "overlays/keda-scaledjob", "overlays/oidc"];
const KEDA_CRDS = ["scaledobjects", "scaledjobs", "triggerauthentications"].map((name) =>
  path.join(ROOT, `test/fixtures/keda/keda.sh_${name}.yaml`),
);
/** What the one CEL rule of KEDA's CRDs says (checked by hand below: ajv cannot run CEL). */
const SCALED_OBJECT_RULE =
  "!has(self.minReplicaCount) || self.minReplicaCount <= (has(self.maxReplicaCount) ? self.maxReplicaCount : 100)";
const FAKE_TOKEN = `op_agent_${"A".repeat(32)}`;
const FAKE_POOL = `pool_${"a".repeat(26)}`;

type Container = {
  name: string;
  image: string;
  args?: string[];
  env?: Array<{
    name: string;
    value?: string;
    valueFrom?: {
      secretKeyRef?: { name: string; key: string };
      fieldRef?: { fieldPath: string };
    };
  }>;
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  ports?: Array<{ name: string; containerPort: number }>;
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  lifecycle?: unknown;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
};
type PodSpec = {
  containers: Container[];
  securityContext?: Record<string, unknown>;
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
  volumes?: Array<{
    name: string;
    emptyDir?: unknown;
    projected?: {
      sources: Array<{
        serviceAccountToken?: { path: string; audience: string; expirationSeconds: number };
      }>;
    };
  }>;
};
type Trigger = {
  type: string;
  metricType?: string;
  metadata: Record<string, string>;
  authenticationRef?: { name: string };
};

const rendered = new Map<string, KubeObject[]>();
let keda: Map<string, CrdValidator>;

beforeAll(() => {
  for (const overlay of OVERLAYS) {
    rendered.set(overlay, kustomize(path.join(DEPLOY, overlay)));
  }
  keda = new Map(
    KEDA_CRDS.map((file) => {
      const validator = crdValidator(file, "v1alpha1");
      return [validator.kind, validator];
    }),
  );
});

function objectsOf(overlay: string): KubeObject[] {
  const objects = rendered.get(overlay);
  if (!objects) {
    throw new Error(`${overlay} was not rendered`);
  }
  return objects;
}

function one<T>(objects: KubeObject[], kind: string): KubeObject & T {
  const found = objects.filter((o) => o.kind === kind);
  expect(
    found.map((o) => o.kind),
    `one ${kind}`,
  ).toEqual([kind]);
  return found[0] as KubeObject & T;
}

function isKeda(object: KubeObject): boolean {
  return object.apiVersion.startsWith("keda.sh/");
}

/** KEDA objects against the CRD schema, plus its CEL rule; the errors, empty when valid. */
function validateKeda(object: KubeObject): string[] {
  const validator = keda.get(object.kind);
  if (!validator) {
    return [`no KEDA CRD schema for ${object.kind}`];
  }
  const errors = validator.validate(object);
  const spec = object.spec as { minReplicaCount?: number; maxReplicaCount?: number };
  if (
    object.kind === "ScaledObject" &&
    (spec.minReplicaCount ?? 0) > (spec.maxReplicaCount ?? 100)
  ) {
    errors.push("minReplicaCount must be less than or equal to maxReplicaCount");
  }
  return errors;
}

/**
 * The environment the container's agent sees: its ConfigMap (which must be one of the rendered
 * objects, under the name kustomize gave it), its values, a token for the Secret reference and
 * a pod name; the pool placeholder becomes a valid id.
 */
function agentEnv(container: Container, objects: KubeObject[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    const name = source.configMapRef?.name;
    const map = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === name);
    expect(map, `ConfigMap ${name}`).toBeDefined();
    Object.assign(env, (map as unknown as { data: Record<string, string> }).data);
  }
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom;
    if (ref?.secretKeyRef) {
      expect(ref.secretKeyRef).toEqual({ name: "outpost-agent", key: "token" });
      env[variable.name] = FAKE_TOKEN;
    } else if (ref?.fieldRef) {
      expect(ref.fieldRef.fieldPath).toBe("metadata.name");
      env[variable.name] = "outpost-agent-5d9c7b-x2x7q";
    } else {
      env[variable.name] = String(variable.value);
    }
  }
  env.OUTPOST_POOL_ID = FAKE_POOL;
  return env;
}

/** What the real agent makes of the container's environment and arguments. */
function agentConfig(container: Container, objects: KubeObject[]): AgentConfig {
  const env = agentEnv(container, objects);
  const known = new Set<string>([...SETTINGS.map((s) => s.env), TOKEN_ENV, "TMPDIR"]);
  expect(Object.keys(env).filter((name) => !known.has(name))).toEqual([]);
  const config = loadConfig(container.args ?? [], env);
  if ("print" in config) {
    throw new Error("the container's arguments print instead of running");
  }
  return config;
}

function deploymentPod(objects: KubeObject[]): PodSpec {
  return one<{ spec: { template: { spec: PodSpec } } }>(objects, "Deployment").spec.template.spec;
}

function theContainer(pod: PodSpec): Container {
  expect(pod.containers).toHaveLength(1);
  return pod.containers[0] as Container;
}

describe("deploy/kubernetes renders objects the Kubernetes and KEDA schemas accept", () => {
  it.each(OVERLAYS)("%s", async (overlay) => {
    const objects = objectsOf(overlay);
    expect(objects.length).toBeGreaterThan(0);
    for (const object of objects) {
      if (isKeda(object)) {
        expect(validateKeda(object), `${object.kind} ${object.metadata.name}`).toEqual([]);
      } else {
        expect(
          await validateWithModel(object),
          `${object.kind} ${object.metadata.name}`,
        ).toBeNull();
      }
    }
  });

  it("has no field the Kubernetes types do not know (tsc over kubernetes-models' interfaces)", () => {
    const core = OVERLAYS.flatMap((overlay) => objectsOf(overlay).filter((o) => !isKeda(o)));
    expect(typeCheckWithModels(core)).toBe("");
  });

  it("the validators refuse what the API server would (so the checks above can fail)", async () => {
    const base = objectsOf("base");
    const deployment = structuredClone(one(base, "Deployment")) as KubeObject & {
      spec: { template: { spec: { containers: Array<Record<string, unknown>> } } };
    };
    const container = deployment.spec.template.spec.containers[0] as Record<string, unknown>;
    container.readinesProbe = container.readinessProbe;
    expect(typeCheckWithModels([deployment])).toContain("'\"readinesProbe\"' does not exist");
    container.ports = [{ name: "metrics", containerPort: "9464" }];
    expect(await validateWithModel(deployment)).toMatch(/containerPort must be integer/);

    const scaled = structuredClone(one(objectsOf("overlays/keda-scaledobject"), "ScaledObject"));
    const spec = scaled.spec as Record<string, unknown>;
    spec.minReplicas = 0;
    spec.maxReplicaCount = "10";
    expect(validateKeda(scaled)).toEqual(
      expect.arrayContaining([
        "/spec must NOT have additional properties (minReplicas)",
        "/spec/maxReplicaCount must be integer",
      ]),
    );
    const inverted = structuredClone(one(objectsOf("overlays/keda-scaledobject"), "ScaledObject"));
    Object.assign(inverted.spec as object, { minReplicaCount: 5, maxReplicaCount: 2 });
    expect(validateKeda(inverted)).toEqual([
      "minReplicaCount must be less than or equal to maxReplicaCount",
    ]);
    const auth = structuredClone(
      one(objectsOf("overlays/keda-scaledobject"), "TriggerAuthentication"),
    );
    (auth.spec as { secretTargetRef: Array<Record<string, string>> }).secretTargetRef = [
      { parameter: "token", name: "outpost-autoscaling" },
    ];
    expect(validateKeda(auth)).toEqual([
      "/spec/secretTargetRef/0 must have required property 'key'",
    ]);
    // The one CEL rule of KEDA's CRDs is the one checked by hand in validateKeda.
    expect([...keda.values()].flatMap((v) => v.celRules)).toEqual([SCALED_OBJECT_RULE]);
  });
});

describe("the base Deployment", () => {
  it("runs the image agent/Dockerfile builds, as its non-root user, on a read-only root", () => {
    const pod = deploymentPod(objectsOf("base"));
    const container = theContainer(pod);
    const dockerfile = readFileSync(path.join(ROOT, "agent/Dockerfile"), "utf8");
    const imageName = /docker build -t (\S+) /.exec(dockerfile)?.[1];
    const [uid, gid] = (/^USER (\d+):(\d+)$/m.exec(dockerfile) ?? []).slice(1).map(Number);
    const version = (
      JSON.parse(readFileSync(path.join(ROOT, "agent/package.json"), "utf8")) as { version: string }
    ).version;
    expect(container.image).toBe(`${imageName}:${version}`);
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: uid,
      runAsGroup: gid,
      fsGroup: gid,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(container.resources?.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container.resources?.limits).toMatchObject({ memory: expect.any(String) });
  });

  it("configures an agent that parses, writes only to emptyDir volumes, and drains on SIGTERM", () => {
    const objects = objectsOf("base");
    const pod = deploymentPod(objects);
    const container = theContainer(pod);
    const config = agentConfig(container, objects);
    expect(config).toMatchObject({
      address: "https://outpost.example.com",
      token: FAKE_TOKEN,
      oidc: null,
      autoUpdate: false,
      single: false,
      name: "outpost-agent-5d9c7b-x2x7q",
    });
    const emptyDirs = new Set(
      (pod.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name),
    );
    const writable = (container.volumeMounts ?? []).filter((m) => emptyDirs.has(m.name));
    expect(writable.map((m) => m.mountPath).sort()).toEqual([config.dataDir, "/tmp"].sort());
    expect(agentEnv(container, objects).TMPDIR).toBe("/tmp");
    // A job may finish within the shutdown grace; a cancel then has its two SIGINTs and
    // the report their time, all before the kubelet's SIGKILL.
    const drainMs = config.shutdownGraceMs + 2 * config.cancelGraceMs + 5_000 + 60_000;
    expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThanOrEqual(drainMs);
    expect(config.shutdownGraceMs).toBeGreaterThanOrEqual(30 * 60_000);
    expect(container.lifecycle).toBeUndefined();
  });

  it("probes /healthz and /readyz on the port the agent serves them on", () => {
    const objects = objectsOf("base");
    const container = theContainer(deploymentPod(objects));
    const config = agentConfig(container, objects);
    expect(config.metricsAddress).toEqual({ host: "0.0.0.0", port: 9464 });
    const port = container.ports?.find((p) => p.name === container.livenessProbe?.httpGet.port);
    expect(port?.containerPort).toBe(config.metricsAddress?.port);
    expect(container.livenessProbe?.httpGet.path).toBe("/healthz");
    expect(container.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "metrics" });
  });
});

describe("the keda-scaledobject overlay", () => {
  it("scales the Deployment on the pool's desiredAgents with bearer auth, to zero when idle", () => {
    const objects = objectsOf("overlays/keda-scaledobject");
    const deployment = one<{ spec: Record<string, unknown> }>(objects, "Deployment");
    expect(deployment.spec.replicas).toBeUndefined();
    const scaled = one<{
      spec: { scaleTargetRef: { name: string }; minReplicaCount: number; triggers: Trigger[] };
    }>(objects, "ScaledObject");
    expect(scaled.spec.scaleTargetRef).toEqual({ name: deployment.metadata.name });
    expect(scaled.spec.minReplicaCount).toBe(0);
    expectAutoscalingTrigger(scaled.spec.triggers, objects);
  });
});

describe("the keda-scaledjob overlay", () => {
  it("runs one Job per agent with --single and the base pod, without a Deployment", () => {
    const objects = objectsOf("overlays/keda-scaledjob");
    expect(objects.filter((o) => o.kind === "Deployment")).toEqual([]);
    const job = one<{
      spec: {
        jobTargetRef: { backoffLimit: number; template: { spec: PodSpec } };
        scalingStrategy: { strategy: string };
        triggers: Trigger[];
      };
    }>(objects, "ScaledJob");
    const pod = job.spec.jobTargetRef.template.spec;
    expect(pod.restartPolicy).toBe("Never");
    expect(job.spec.jobTargetRef.backoffLimit).toBe(0);
    expect(job.spec.scalingStrategy.strategy).toBe("default");
    const container = theContainer(pod);
    const base = theContainer(deploymentPod(objectsOf("base")));
    expect({ ...container, args: [] }).toEqual({ ...base, args: [] });
    const { terminationGracePeriodSeconds, securityContext, volumes } = deploymentPod(
      objectsOf("base"),
    );
    expect(pod).toMatchObject({ terminationGracePeriodSeconds, securityContext, volumes });
    expect(agentConfig(container, objects)).toMatchObject({ single: true, token: FAKE_TOKEN });
    expectAutoscalingTrigger(job.spec.triggers, objects);
  });
});

describe("the oidc overlay", () => {
  it("logs in with a projected service account token: no Secret anywhere", () => {
    const objects = objectsOf("overlays/oidc");
    expect(JSON.stringify(objects)).not.toMatch(/secretKeyRef|"kind":"Secret"/);
    const pod = deploymentPod(objects);
    const container = theContainer(pod);
    const projected = pod.volumes?.find((v) => v.projected !== undefined);
    const token = projected?.projected?.sources[0]?.serviceAccountToken;
    expect(token).toMatchObject({ audience: "outpost", path: "token" });
    expect(token?.expirationSeconds).toBeGreaterThanOrEqual(600);
    const mount = container.volumeMounts?.find((m) => m.name === projected?.name);
    expect(container.args).toEqual(["--oidc-token-file", `${mount?.mountPath}/${token?.path}`]);
    expect(agentConfig(container, objects)).toMatchObject({
      token: null,
      oidc: { tokenFile: `${mount?.mountPath}/token`, poolId: FAKE_POOL },
    });
  });
});

describe("outpost.env sets the coordinator and pool once", () => {
  const copy = mkdtempSync(path.join(tmpdir(), "outpost-kustomize-"));
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it("the KEDA trigger URLs follow it", () => {
    cpSync(DEPLOY, copy, { recursive: true });
    writeFileSync(
      path.join(copy, "base/outpost.env"),
      `OUTPOST_ADDRESS=http://outpost.internal:8443\nOUTPOST_POOL_ID=${FAKE_POOL}\n`,
    );
    for (const [overlay, kind] of [
      ["overlays/keda-scaledobject", "ScaledObject"],
      ["overlays/keda-scaledjob", "ScaledJob"],
    ] as const) {
      const scaled = one<{ spec: { triggers: Trigger[] } }>(
        kustomize(path.join(copy, overlay)),
        kind,
      );
      expect(scaled.spec.triggers[0]?.metadata.url).toBe(
        `http://outpost.internal:8443/api/v1/pools/${FAKE_POOL}/autoscaling`,
      );
    }
  });
});

/** The metrics-api trigger on the coordinator's autoscaling endpoint, as KEDA needs it. */
function expectAutoscalingTrigger(triggers: Trigger[], objects: KubeObject[]): void {
  const data = one<{ data: Record<string, string> }>(objects, "ConfigMap").data;
  expect(triggers).toHaveLength(1);
  const trigger = triggers[0] as Trigger;
  expect(trigger.type).toBe("metrics-api");
  expect(trigger.metadata).toEqual({
    url: `${data.OUTPOST_ADDRESS}/api/v1/pools/${data.OUTPOST_POOL_ID}/autoscaling`,
    format: "json",
    valueLocation: "desiredAgents",
    targetValue: "1",
    activationTargetValue: "0",
    authMode: "bearer",
  });
  const auth = one<{ spec: { secretTargetRef: unknown[] } }>(objects, "TriggerAuthentication");
  expect(trigger.authenticationRef).toEqual({ name: auth.metadata.name });
  expect(auth.spec.secretTargetRef).toEqual([
    { parameter: "token", name: "outpost-autoscaling", key: "token" },
  ]);
}
