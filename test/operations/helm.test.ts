// The Helm chart (deploy/helm/fencekeeper): helm lints it and renders it for its default values and for
// the two in its ci/ folder (mutual TLS; JWTs and a policy); every object rendered validates against
// Kubernetes' published schemas (kubernetes-validate, strict: an unknown field fails); what each set
// of values means is in the objects (the probes, the files the settings name and the volumes that hold
// them, the drain's time budget); values the server would refuse are refused at render time; and the
// plain manifest in deploy/kubernetes/ is the chart's own rendering. helm and kubernetes-validate come
// from scripts/setup-helm.sh (started in the background by the test setup; waited for here).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { startEtcd } from "../harness/etcd.js";
import { startServer } from "../harness/server.js";
import { HealthCheckResponse_ServingStatus as Status } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { healthClient } from "./support/mesh-server.js";

const CHART = "deploy/helm/fencekeeper";
const HELM = ".tools/bin/helm";
const VALIDATE = ".tools/kubernetes-validate/bin/kubernetes-validate";
const PYTHON = ".tools/kubernetes-validate/bin/python";
/** The oldest Kubernetes the chart supports (Chart.yaml's kubeVersion: the preStop sleep action) and a recent one. */
const KUBERNETES = ["1.30.0", "1.34.0"];

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  [field: string]: any;
}

function helm(args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(HELM, args, { encoding: "utf8" });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function render(valuesFile?: string, set: string[] = []): string {
  const r = helm(["template", "fencekeeper", CHART, "--namespace", "default", ...(valuesFile ? ["-f", valuesFile] : []), ...set.flatMap((s) => ["--set", s])]);
  expect(r.status, r.stderr).to.equal(0);
  return r.stdout;
}

/** The objects of a multi-document YAML, parsed by PyYAML (from kubernetes-validate's venv). */
function objects(yaml: string): K8sObject[] {
  const json = execFileSync(PYTHON, ["-c", "import sys, json, yaml; print(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d]))"], { input: yaml, encoding: "utf8" });
  return JSON.parse(json);
}

function one(objs: K8sObject[], kind: string, name?: string): K8sObject {
  const found = objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  expect(found, `${kind} ${name ?? ""}`).to.have.length(1);
  return found[0];
}

/** The environment a replica starts with: the chart's ConfigMap and Secret (envFrom) and extraEnv. */
function environment(objs: K8sObject[]): Map<string, string> {
  const env = new Map<string, string>();
  const container = one(objs, "Deployment").spec.template.spec.containers[0];
  for (const from of container.envFrom) {
    if (from.configMapRef) for (const [k, v] of Object.entries(one(objs, "ConfigMap", from.configMapRef.name).data)) env.set(k, String(v));
    if (from.secretRef) {
      const secret = objs.find((o) => o.kind === "Secret" && o.metadata.name === from.secretRef.name);
      if (secret) for (const [k, v] of Object.entries(secret.stringData ?? {})) env.set(k, String(v));
    }
  }
  for (const e of container.env ?? []) env.set(e.name, e.value);
  return env;
}

/** Every file a setting names lies in a volume mounted read-only, and each such volume comes from where the values say. */
function expectFilesMounted(objs: K8sObject[]): void {
  const pod = one(objs, "Deployment").spec.template.spec;
  const mounts: { mountPath: string; name: string; readOnly: boolean }[] = pod.containers[0].volumeMounts ?? [];
  for (const [name, value] of environment(objs)) {
    for (const path of value.split(",").filter((p) => p.startsWith("/etc/"))) {
      const mount = mounts.find((m) => path.startsWith(m.mountPath + "/"));
      expect(mount, `${name}=${path} is in no mounted volume`).to.not.equal(undefined);
      expect(mount!.readOnly, `${mount!.mountPath} read-only`).to.equal(true);
      expect(pod.volumes.map((v: { name: string }) => v.name)).to.include(mount!.name);
    }
  }
  // And nothing is mounted that no setting reads.
  const paths = [...environment(objs).values()].flatMap((v) => v.split(","));
  for (const m of mounts) expect(paths.some((p) => p.startsWith(m.mountPath + "/")), `${m.mountPath} is read by a setting`).to.equal(true);
}

function terminationBudget(objs: K8sObject[]): { grace: number; needed: number } {
  const pod = one(objs, "Deployment").spec.template.spec;
  const env = environment(objs);
  const preStop = pod.containers[0].lifecycle.preStop.sleep.seconds;
  const needed = preStop + Number(env.get("FENCEKEEPER_SHUTDOWN_GRACE")) / 1000 + Number(env.get("FENCEKEEPER_ETCD_TIMEOUT")) / 1000;
  return { grace: pod.terminationGracePeriodSeconds, needed };
}

/** The FENCEKEEPER_* variables docs/configuration.md documents: a misspelled one would be ignored by the server. */
function documentedVariables(): Set<string> {
  return new Set([...readFileSync("docs/configuration.md", "utf8").matchAll(/`(FENCEKEEPER_[A-Z0-9_]+)`/g)].map((m) => m[1]));
}

describe("the Helm chart", function () {
  this.timeout(60_000);
  const renders = new Map<string, { yaml: string; objs: K8sObject[] }>();
  const cases: Record<string, string | undefined> = {
    default: undefined,
    mtls: `${CHART}/ci/mtls-values.yaml`,
    "jwt-policy": `${CHART}/ci/jwt-policy-values.yaml`,
  };

  before(function () {
    // A fresh machine builds helm (minutes); the setup started that in the background, and this waits.
    this.timeout(20 * 60_000);
    execFileSync("bash", ["scripts/setup-helm.sh"], { stdio: ["ignore", "ignore", "inherit"] });
    for (const [name, file] of Object.entries(cases)) {
      const yaml = render(file);
      renders.set(name, { yaml, objs: objects(yaml) });
    }
  });

  for (const [name, file] of Object.entries(cases)) {
    it(`lints cleanly with the ${name} values`, () => {
      const r = helm(["lint", "--strict", CHART, ...(file ? ["-f", file] : [])]);
      expect(r.status, r.stdout + r.stderr).to.equal(0);
      expect(r.stdout).to.match(/0 chart\(s\) failed/);
    });

    it(`renders objects that validate against Kubernetes' schemas with the ${name} values`, () => {
      const dir = mkdtempSync(join(tmpdir(), "fk-helm-"));
      try {
        const file = join(dir, `${name}.yaml`);
        writeFileSync(file, renders.get(name)!.yaml);
        for (const version of KUBERNETES) {
          const r = spawnSync(VALIDATE, ["-k", version, "--strict", file], { encoding: "utf8" });
          const out = r.stdout + r.stderr;
          expect(r.status, out).to.equal(0);
          // The only kind without a Kubernetes schema is the Prometheus Operator's ServiceMonitor.
          const warnings = out.split("\n").filter((l) => l.startsWith("WARN") && !/kind ServiceMonitor with api version monitoring\.coreos\.com\/v1/.test(l));
          expect(warnings, out).to.deep.equal([]);
          const passed = out.split("\n").filter((l) => l.startsWith("INFO") && l.includes("passed"));
          const kinds = renders.get(name)!.objs.filter((o) => o.kind !== "ServiceMonitor").length;
          expect(passed, out).to.have.length(kinds);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it(`sets only documented settings, mounts every file a setting names, and gives the drain its time, with the ${name} values`, () => {
      const { objs } = renders.get(name)!;
      const documented = documentedVariables();
      for (const variable of environment(objs).keys()) expect(documented.has(variable), `${variable} is not a setting of the server`).to.equal(true);
      expectFilesMounted(objs);
      const { grace, needed } = terminationBudget(objs);
      expect(grace, "terminationGracePeriodSeconds covers preStop + the drain + one etcd call").to.be.greaterThan(needed);
      const pdb = one(objs, "PodDisruptionBudget");
      expect(pdb.spec.selector.matchLabels).to.deep.equal(one(objs, "Deployment").spec.selector.matchLabels);
      expect(one(objs, "Service").spec.selector).to.deep.equal(one(objs, "Deployment").spec.selector.matchLabels);
    });
  }

  it("by default: three replicas probed with gRPC health, behind a mesh (no authentication of its own), metrics on their port", () => {
    const { objs } = renders.get("default")!;
    const deployment = one(objs, "Deployment");
    expect(deployment.spec.replicas).to.equal(3);
    const c = deployment.spec.template.spec.containers[0];
    expect(c.readinessProbe.grpc).to.deep.equal({ port: 50051 });
    expect(c.livenessProbe.grpc).to.deep.equal({ port: 50051, service: "liveness" });
    const env = environment(objs);
    expect(env.get("FENCEKEEPER_ALLOW_UNAUTHENTICATED")).to.equal("on");
    expect(env.get("FENCEKEEPER_METRICS_LISTEN")).to.equal("0.0.0.0:9464");
    expect(env.get("FENCEKEEPER_ETCD_ENDPOINTS")).to.equal("http://etcd-0.etcd:2379,http://etcd-1.etcd:2379,http://etcd-2.etcd:2379");
    expect(objs.filter((o) => o.kind === "ServiceMonitor")).to.have.length(0);
    expect(terminationBudget(objs).grace).to.equal(25);
  });

  it("by default, without authentication of its own: a NetworkPolicy lets only labelled pods reach the API, the Service's names are the allowed Hosts, and the notes warn", () => {
    const { objs } = renders.get("default")!;
    const policy = one(objs, "NetworkPolicy");
    expect(policy.spec.podSelector.matchLabels).to.deep.equal(one(objs, "Deployment").spec.selector.matchLabels);
    expect(policy.spec.policyTypes).to.deep.equal(["Ingress"]);
    const api = policy.spec.ingress.find((r: any) => r.ports[0].port === "grpc");
    expect(api.from).to.deep.equal([{ podSelector: { matchLabels: { "fencekeeper-client": "true" } } }]);
    expect(environment(objs).get("FENCEKEEPER_ALLOWED_HOSTS")).to.equal("fencekeeper,fencekeeper.default,fencekeeper.default.svc,fencekeeper.default.svc.cluster.local");
    const notes = (values: string[]) => {
      const r = helm(["install", "fencekeeper", CHART, "--namespace", "default", "--dry-run=client", ...values]);
      expect(r.status, r.stderr).to.equal(0);
      return r.stdout.slice(r.stdout.indexOf("NOTES:"));
    };
    expect(notes([])).to.match(/WARNING: the API has no authentication of its own/).and.match(/Only pods labelled fencekeeper-client=true in namespace default reach it/);
    expect(notes(["--set", "networkPolicy.enabled=false"])).to.match(/every pod in the cluster reaches it/);
    expect(notes(["-f", cases.mtls!])).to.not.match(/WARNING/);
    expect(environment(renders.get("mtls")!.objs).has("FENCEKEEPER_ALLOWED_HOSTS"), "with authentication, no Host rule to configure").to.equal(false);
  });

  it("with mutual TLS: the API port serves TLS and asks for client certificates, probes go to the metrics port's /readyz and /livez, etcd over TLS, a ServiceMonitor", () => {
    const { objs } = renders.get("mtls")!;
    const env = environment(objs);
    expect(env.get("FENCEKEEPER_ALLOW_UNAUTHENTICATED")).to.equal("off");
    expect(env.get("FENCEKEEPER_TLS_CERT")).to.equal("/etc/fencekeeper/tls/tls.crt");
    expect(env.get("FENCEKEEPER_TLS_CLIENT_CA")).to.equal("/etc/fencekeeper/client-ca/ca.crt");
    expect(env.get("FENCEKEEPER_ETCD_CA")).to.equal("/etc/fencekeeper/etcd/ca.crt");
    expect(env.get("FENCEKEEPER_ETCD_CERT")).to.equal("/etc/fencekeeper/etcd/tls.crt");
    expect(env.get("FENCEKEEPER_TOKEN_SIGNING_KEY")).to.equal("/etc/fencekeeper/signing/signing-key.pem");
    const pod = one(objs, "Deployment").spec.template.spec;
    const secrets = Object.fromEntries(pod.volumes.map((v: any) => [v.name, v.secret?.secretName]));
    expect(secrets).to.deep.include({ tls: "fencekeeper-tls", "client-ca": "fencekeeper-client-ca", "etcd-tls": "fencekeeper-etcd-tls", signing: "fencekeeper-signing" });
    const c = pod.containers[0];
    expect(c.readinessProbe.httpGet).to.deep.equal({ path: "/readyz", port: "http-metrics" });
    expect(c.livenessProbe.httpGet).to.deep.equal({ path: "/livez", port: "http-metrics" });
    const monitor = one(objs, "ServiceMonitor");
    expect(monitor.metadata.labels).to.include({ release: "prometheus" });
    expect(monitor.spec.endpoints[0]).to.include({ port: "http-metrics", path: "/metrics" });
    expect(monitor.spec.selector.matchLabels).to.deep.equal(one(objs, "Service").spec.selector);
  });

  it("with JWTs and a policy: keys from a ConfigMap, the inline policy in a ConfigMap of its own as the server reads it, a longer drain", () => {
    const { objs } = renders.get("jwt-policy")!;
    const env = environment(objs);
    expect(env.get("FENCEKEEPER_JWT_KEYS")).to.equal("/etc/fencekeeper/jwt/jwks.json");
    expect(env.get("FENCEKEEPER_JWT_ISSUER")).to.equal("https://issuer.example.com");
    expect(env.get("FENCEKEEPER_JWT_AUDIENCE")).to.equal("fencekeeper");
    expect(env.get("FENCEKEEPER_POLICY")).to.equal("/etc/fencekeeper/policy/policy.json");
    const pod = one(objs, "Deployment").spec.template.spec;
    const volumes = Object.fromEntries(pod.volumes.map((v: any) => [v.name, v]));
    expect(volumes["jwt-keys"].configMap.name).to.equal("fencekeeper-jwks");
    const policy = one(objs, "ConfigMap", volumes.policy.configMap.name);
    const parsed = JSON.parse(policy.data["policy.json"]);
    expect(parsed.version).to.equal(1);
    expect(parsed.rules).to.have.length(2);
    expect(one(objs, "Deployment").spec.replicas).to.equal(5);
    expect(one(objs, "PodDisruptionBudget").spec.maxUnavailable).to.equal(2);
    expect(terminationBudget(objs).grace).to.equal(45);
  });

  it("refuses at render time the values the server would refuse at start, saying why", () => {
    const refusals: [string[], RegExp][] = [
      [["server.allowUnauthenticated=false"], /no authentication/],
      [["server.policy.enabled=true", "server.policy.configMapName=p"], /policy.enabled needs authentication/],
      [["server.tls.clientCA.enabled=true", "server.tls.clientCA.secretName=ca"], /needs server.tls.enabled/],
      [["server.tls.enabled=true", "server.tls.secretName=t", "metrics.enabled=false"], /needs metrics.enabled/],
      [["server.jwt.enabled=true", "server.jwt.keys.secretName=k"], /needs server.jwt.issuer and server.jwt.audience/],
      [["etcd.tls.enabled=true"], /needs etcd.tls.secretName/],
    ];
    for (const [set, message] of refusals) {
      const r = helm(["template", "fencekeeper", CHART, ...set.flatMap((s) => ["--set", s])]);
      expect(r.status, set.join(" ")).to.not.equal(0);
      expect(r.stderr, set.join(" ")).to.match(message);
    }
  });

  it("a server started with the default values' settings serves (only the addresses are the test's)", async () => {
    const env = Object.fromEntries(environment(renders.get("default")!.objs));
    const etcd = await startEtcd();
    try {
      // The harness gives --listen, --metrics-listen, --etcd and --prefix as flags, which take precedence.
      const server = await startServer({ etcd: etcd.endpoint, env });
      try {
        const { status } = await healthClient(server.url).check({ service: "" }, { timeoutMs: 5000 });
        expect(status).to.equal(Status.SERVING);
      } finally {
        await server.stop();
      }
    } finally {
      await etcd.destroy();
    }
  });

  it("deploy/kubernetes/fencekeeper.yaml is the chart rendered with its default values (scripts/render-manifests.sh)", () => {
    const committed = readFileSync("deploy/kubernetes/fencekeeper.yaml", "utf8").replace(/^#.*\n/gm, "");
    expect(committed.trim(), "deploy/kubernetes/fencekeeper.yaml is stale: run bash scripts/render-manifests.sh").to.equal(renders.get("default")!.yaml.replace(/^#.*\n/gm, "").trim());
  });
});
