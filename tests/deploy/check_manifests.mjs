// deploy/'s rendered manifests, checked two ways (tests/deploy/run_test.sh runs this):
//  1. every object against its OpenAPI schema: Kubernetes' own (kubernetes-models), KEDA's and prometheus-
//     operator's (their CRDs' schemas, @kubernetes-models/*). No npm package carries KServe's CRD: an
//     InferenceService's predictor is checked as the pod spec it inlines, its metadata as object metadata, its
//     replica bounds as integers. An object of any other kind fails: nothing passes unchecked.
//  2. what steno needs of them: the container's arguments and the settings file they name, the ports in it,
//     the probes on steno's health routes, the GPU asked for, the drain inside the grace period, the API key
//     from the Secret, a PodMonitor that scrapes the pods, and one queue-time query in every autoscaler.
// It writes what the live half of the test needs to OUT/facts.json and each render's steno.json to
// OUT/configs/NAME.json: run_test.sh starts steno with those settings, probes the routes, and runs the queries
// against a real Prometheus scraping it.
//
//   node check_manifests.mjs NODE_MODULES_DIR OUT_DIR NAME=PROFILE:RENDERED.yaml ...
// PROFILE: gpu, cpu, gpu-sharing (the workload a Deployment), kserve; with +keda or +hpa for the autoscaler.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [modulesDir, outDir, ...renders] = process.argv.slice(2);
if (!modulesDir || !outDir || renders.length === 0) {
  console.error("usage: node check_manifests.mjs NODE_MODULES_DIR OUT_DIR NAME=PROFILE:RENDERED.yaml ...");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modulesDir), "package.json"));
const YAML = require("yaml");

// The autoscaling query, as in deploy/overlays/keda: mean queue time per request over 30 s, in microseconds.
const QUERY =
  'avg(increase(nv_inference_queue_duration_us{job="steno"}[30s]) / ' +
  '(1 + increase(nv_inference_request_success{job="steno"}[30s])))';
// prometheus-adapter's form of it: the adapter puts the HPA's pod selection in place of job="steno".
const ADAPTER_QUERY = QUERY.replaceAll('{job="steno"}', "{<<.LabelMatchers>>}") + " by (<<.GroupBy>>)";
const READY = "/v2/health/ready";
const LIVE = "/v2/health/live";
const CONFIG_ARGS = ["serve", "--config"];

let failures = 0;
const fail = (where, msg) => {
  failures++;
  console.error(`FAIL ${where}: ${msg}`);
};
const check = (cond, where, msg) => {
  if (!cond) fail(where, msg);
  return !!cond;
};
const squash = (s) => String(s).replace(/\s+/g, " ").trim();

// ---- 1. schemas ---------------------------------------------------------------------------------------------

function modelClass(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  let mod;
  if (group === "" || !group.includes(".") || group.endsWith(".k8s.io")) mod = `kubernetes-models/${apiVersion}`;
  else if (group === "keda.sh") mod = `@kubernetes-models/keda/${apiVersion}`;
  else if (group === "monitoring.coreos.com") mod = `@kubernetes-models/prometheus-operator/${apiVersion}`;
  else return null;
  try {
    return require(mod)[kind] ?? null;
  } catch {
    return null;
  }
}

// KServe's PredictorSpec: a pod spec with these of its own (ComponentExtensionSpec and the framework fields).
const PREDICTOR_OWN = new Set([
  "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType", "containerConcurrency",
  "timeout", "canaryTrafficPercent", "logger", "batcher", "labels", "annotations", "deploymentStrategy",
  "autoScaling", "workerSpec", "model", "storageUri",
]);

function validateInferenceService(obj, where) {
  const { Pod } = require("kubernetes-models/v1");
  const predictor = obj.spec?.predictor;
  if (!check(predictor && typeof predictor === "object", where, "spec.predictor missing")) return;
  check(obj.apiVersion === "serving.kserve.io/v1beta1", where, `apiVersion ${obj.apiVersion}`);
  const podSpec = Object.fromEntries(Object.entries(predictor).filter(([k]) => !PREDICTOR_OWN.has(k)));
  try {
    new Pod({ metadata: obj.metadata, spec: podSpec }).validate();
  } catch (e) {
    fail(where, `predictor as a pod spec: ${e.message}`);
  }
  for (const k of ["minReplicas", "maxReplicas"])
    check(Number.isInteger(predictor[k]) && predictor[k] >= 1, where, `spec.predictor.${k} must be an integer >= 1`);
  check(predictor.minReplicas <= predictor.maxReplicas, where, "minReplicas > maxReplicas");
  for (const k of ["labels", "annotations"])
    if (predictor[k] !== undefined)
      check(Object.values(predictor[k]).every((v) => typeof v === "string"), where, `predictor.${k}: strings only`);
  console.log(`  ${where}: predictor valid as a core/v1 pod spec (no schema package for KServe's CRD)`);
}

function validateSchema(obj, where) {
  if (!check(obj && obj.apiVersion && obj.kind, where, "no apiVersion or kind")) return;
  if (obj.apiVersion.startsWith("serving.kserve.io/")) return validateInferenceService(obj, where);
  const Model = modelClass(obj.apiVersion, obj.kind);
  if (!Model) return fail(where, `no schema known for ${obj.apiVersion} ${obj.kind}`);
  try {
    new Model(obj).validate();
    console.log(`  ${where}: valid against ${obj.apiVersion} ${obj.kind}'s schema`);
  } catch (e) {
    fail(where, `${obj.apiVersion} ${obj.kind}: ${e.message}`);
  }
}

// ---- 2. what steno needs --------------------------------------------------------------------------------------

const find = (objs, kind, name) => objs.find((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));

// The workload's pod: a Deployment's template, or the pod KServe makes from the predictor.
function workloadPod(objs, profile) {
  if (profile.kserve) {
    const isvc = find(objs, "InferenceService");
    if (!isvc) return null;
    const p = isvc.spec.predictor;
    return { name: `${isvc.metadata.name}-predictor`, labels: p.labels ?? {}, spec: p, isvc };
  }
  const d = find(objs, "Deployment");
  return d ? { name: d.metadata.name, labels: d.spec.template.metadata?.labels ?? {}, spec: d.spec.template.spec, deployment: d } : null;
}

function portNumber(container, port) {
  if (typeof port === "number") return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

function checkSteno(name, objs, profile, facts) {
  const pod = workloadPod(objs, profile);
  if (!check(pod, name, "no steno workload (Deployment or InferenceService)")) return;
  const c = pod.spec.containers?.[0];
  if (!check(c, name, "no container")) return;
  if (profile.kserve) check(c.name === "kserve-container", name, `KServe's container must be named kserve-container, not ${c.name}`);

  // Arguments: `serve --config FILE`, FILE in a volume made of the ConfigMap that holds steno.json.
  const args = c.args ?? [];
  check(CONFIG_ARGS.every((a, i) => args[i] === a) && args.length === 3, name, `args ${JSON.stringify(args)}`);
  const file = args[2] ?? "";
  const mount = (c.volumeMounts ?? []).find((m) => file.startsWith(m.mountPath + "/"));
  const volume = mount && pod.spec.volumes?.find((v) => v.name === mount.name);
  const cm = volume?.configMap && find(objs, "ConfigMap", volume.configMap.name);
  const key = mount && file.slice(mount.mountPath.length + 1);
  if (!check(cm?.data?.[key], name, `${file} is not a key of a ConfigMap mounted at its directory`)) return;
  let config;
  try {
    config = JSON.parse(cm.data[key]);
  } catch (e) {
    return fail(name, `${key} is not JSON: ${e.message}`);
  }
  fs.writeFileSync(path.join(outDir, "configs", `${name}.json`), cm.data[key]);

  // Ports: the settings' HTTP (and gRPC) port is the container's; on KServe, REST on 8080.
  const httpPort = profile.kserve ? c.ports?.[0]?.containerPort : portNumber(c, "http");
  check(config.port === httpPort, name, `steno.json port ${config.port}, container's HTTP port ${httpPort}`);
  if (profile.kserve) check(httpPort === 8080, name, "KServe's REST port is 8080");
  const grpc = portNumber(c, "grpc") ?? portNumber(c, "h2c");
  if (grpc !== undefined) check(config.grpc_port === grpc, name, `steno.json grpc_port ${config.grpc_port}, container's ${grpc}`);
  check(config.host === "0.0.0.0", name, "steno must listen on the pod's address (host 0.0.0.0)");

  // Probes: KServe v2's health routes, on the HTTP port; room for the model load before liveness applies.
  const probe = (p, route, what) => {
    if (!check(p?.httpGet, name, `no ${what} probe`)) return;
    check(p.httpGet.path === route, name, `${what} probe on ${p.httpGet.path}, not ${route}`);
    check(portNumber(c, p.httpGet.port) === config.port, name, `${what} probe port ${p.httpGet.port} is not steno's HTTP port`);
    facts.probes.push({ render: name, what, path: p.httpGet.path });
  };
  probe(c.startupProbe, READY, "startup");
  probe(c.readinessProbe, READY, "readiness");
  probe(c.livenessProbe, LIVE, "liveness");
  check(c.startupProbe?.periodSeconds === 10 && c.startupProbe?.failureThreshold === 30, name,
        "the startup probe gives the model load 10 s x 30");

  // The device: a whole GPU (base), a device-plugin share, or none on the CPU.
  const limits = c.resources?.limits ?? {};
  const nvidia = Object.keys({ ...limits, ...(c.resources?.requests ?? {}) }).filter((k) => k.startsWith("nvidia.com/"));
  if (profile.device === "cpu") {
    check(nvidia.length === 0, name, `a CPU pod asks for ${nvidia.join(", ")}`);
    check(config.device === "cpu", name, `device ${config.device} without a GPU`);
  } else {
    const resource = profile.device === "gpu-sharing" ? "nvidia.com/gpu.shared" : "nvidia.com/gpu";
    check(nvidia.length === 1 && String(limits[resource]) === "1", name, `limits must ask for ${resource}: 1, have ${JSON.stringify(limits)}`);
    check(/^cuda(:|$)/.test(config.device ?? ""), name, `device ${config.device} on a GPU pod`);
  }
  if (profile.device === "gpu-sharing") checkDevicePluginConfig(name, objs);

  // Drain: preStop, then SIGTERM and steno's drain_timeout_s, inside the grace period.
  const preStop = c.lifecycle?.preStop?.exec?.command;
  const sleep = preStop?.[0] === "sleep" ? Number(preStop[1]) : NaN;
  check(sleep > 0, name, "a preStop sleep lets the Service stop routing before SIGTERM");
  const drain = config.drain_timeout_s ?? 30;
  check(pod.spec.terminationGracePeriodSeconds >= sleep + drain + 5, name,
        `terminationGracePeriodSeconds ${pod.spec.terminationGracePeriodSeconds} < preStop ${sleep} s + drain ${drain} s + 5 s`);

  // Security: not root, nothing to escalate to, a read-only root file system with /tmp writable.
  check(pod.spec.securityContext?.runAsNonRoot === true && pod.spec.securityContext?.runAsUser > 0, name, "pod not non-root");
  check(c.securityContext?.allowPrivilegeEscalation === false && c.securityContext?.readOnlyRootFilesystem === true,
        name, "container may escalate or write its root file system");
  check((c.volumeMounts ?? []).some((m) => m.mountPath === "/tmp"), name, "no writable /tmp for spooled uploads");

  // The API key from the rendered Secret, by environment (never a flag, which `ps` shows).
  const env = (c.env ?? []).find((e) => e.name === "STENO_API_KEY");
  const ref = env?.valueFrom?.secretKeyRef;
  const secret = ref && find(objs, "Secret", ref.name);
  check(secret && (ref.key in (secret.data ?? {}) || ref.key in (secret.stringData ?? {})), name,
        "STENO_API_KEY must come from a key of a rendered Secret");
  check(!args.some((a) => a.startsWith("--api-key")), name, "the API key must not be an argument");

  // Scraping: a PodMonitor whose selector matches the pods, on their HTTP port, as job="steno", with the key.
  const pm = find(objs, "PodMonitor");
  if (check(pm, name, "no PodMonitor")) {
    const sel = pm.spec.selector?.matchLabels ?? {};
    check(Object.keys(sel).length > 0 && Object.entries(sel).every(([k, v]) => pod.labels[k] === v), name,
          "the PodMonitor's selector does not match the pods' labels");
    const ep = pm.spec.podMetricsEndpoints?.[0] ?? {};
    check(portNumber(c, ep.port) === config.port && ep.path === "/metrics", name, "the PodMonitor does not scrape /metrics on steno's HTTP port");
    check(pod.labels[pm.spec.jobLabel] === "steno", name, "the pods' job label (jobLabel) must be steno: the queries select job=\"steno\"");
    check(ep.authorization?.credentials?.name === ref?.name, name, "the PodMonitor must send the API key's Secret");
  }
  const svc = !profile.kserve && find(objs, "Service");
  if (svc) {
    check(Object.entries(svc.spec.selector ?? {}).every(([k, v]) => pod.labels[k] === v), name, "the Service does not select the pods");
    for (const p of svc.spec.ports) check(portNumber(c, p.targetPort) !== undefined, name, `Service port ${p.name} has no container port ${p.targetPort}`);
  }

  if (profile.autoscaler === "keda") checkKeda(name, objs, pod, facts);
  if (profile.autoscaler === "hpa") checkHpa(name, objs, pod, facts);
  if (!profile.autoscaler) check(!find(objs, "ScaledObject") && !find(objs, "HorizontalPodAutoscaler"), name, "an autoscaler where none was expected");
}

function checkKeda(name, objs, pod, facts) {
  const so = find(objs, "ScaledObject");
  if (!check(so, name, "no ScaledObject")) return;
  check(so.spec.scaleTargetRef?.name === pod.name, name, `the ScaledObject scales ${so.spec.scaleTargetRef?.name}, not ${pod.name}`);
  const t = so.spec.triggers?.[0];
  check(so.spec.triggers?.length === 1 && t?.type === "prometheus", name, "one prometheus trigger");
  check(t?.metricType === "Value", name, "mean queue time is a Value, not an AverageValue shared out over the pods");
  check(squash(t?.metadata?.query) === QUERY, name, `query ${squash(t?.metadata?.query)}\n  expected ${QUERY}`);
  const threshold = Number(t?.metadata?.threshold);
  check(Number.isFinite(threshold) && threshold > 0, name, `threshold ${t?.metadata?.threshold}`);
  check(so.spec.minReplicaCount >= 1 && so.spec.minReplicaCount <= so.spec.maxReplicaCount, name, "replica floor and ceiling");
  if (pod.deployment) check(pod.deployment.spec.replicas === so.spec.minReplicaCount, name, "the Deployment should start at the floor");
  facts.queries.push({ render: name, autoscaler: "keda", query: squash(t?.metadata?.query) });
  facts.autoscalers[name] = { min: so.spec.minReplicaCount, max: so.spec.maxReplicaCount, threshold_us: threshold };
}

function checkHpa(name, objs, pod, facts) {
  const hpa = find(objs, "HorizontalPodAutoscaler");
  if (!check(hpa, name, "no HorizontalPodAutoscaler")) return;
  check(hpa.spec.scaleTargetRef?.kind === "Deployment" && hpa.spec.scaleTargetRef?.name === pod.name, name, "the HPA scales the wrong target");
  const m = hpa.spec.metrics?.[0];
  check(m?.type === "Pods" && m.pods?.target?.type === "AverageValue", name, "a Pods metric averaged over the pods");
  const metric = m?.pods?.metric?.name;
  const rulesCm = objs.find((o) => o.kind === "ConfigMap" && o.data?.["config.yaml"]?.includes("rules:"));
  if (!check(rulesCm, name, "no prometheus-adapter rules ConfigMap")) return;
  const rules = YAML.parse(rulesCm.data["config.yaml"]).rules ?? [];
  const rule = rules.find((r) => r.name?.as === metric);
  if (!check(rule, name, `no adapter rule names the metric ${metric}`)) return;
  check(squash(rule.metricsQuery) === ADAPTER_QUERY, name, `adapter query ${squash(rule.metricsQuery)}\n  expected ${ADAPTER_QUERY}`);
  check(new RegExp(rule.name.matches).test("nv_inference_queue_duration_us"), name, "the rule's name pattern misses the series");
  check(rule.seriesQuery.startsWith("nv_inference_queue_duration_us{") && rule.seriesQuery.includes('job="steno"'), name, "seriesQuery");
  check(rule.resources?.overrides?.pod?.resource === "pod" && rule.resources?.overrides?.namespace?.resource === "namespace", name,
        "the rule must map the pod and namespace labels, or the HPA's Pods metric finds nothing");
  // What the adapter sends Prometheus for one pod: the live test runs it with job="steno" and by (instance).
  facts.queries.push({
    render: name, autoscaler: "hpa",
    query: ADAPTER_QUERY.replaceAll("<<.LabelMatchers>>", 'job="steno"').replaceAll("<<.GroupBy>>", "instance"),
  });
  facts.autoscalers[name] = { min: hpa.spec.minReplicas, max: hpa.spec.maxReplicas, threshold_us: Number(m.pods.target.averageValue) };
}

function checkDevicePluginConfig(name, objs) {
  const cm = objs.find((o) => o.kind === "ConfigMap" && o.metadata.name === "nvidia-device-plugin-configs");
  if (!check(cm, name, "no NVIDIA device plugin ConfigMap")) return;
  const kinds = [];
  for (const [key, text] of Object.entries(cm.data ?? {})) {
    const conf = YAML.parse(text);
    const sharing = conf?.sharing ?? {};
    const modes = Object.keys(sharing).filter((k) => k === "mps" || k === "timeSlicing");
    check(conf?.version === "v1" && modes.length === 1, name, `${key}: one of sharing.mps or sharing.timeSlicing (they exclude each other)`);
    const s = sharing[modes[0]] ?? {};
    check(s.renameByDefault === true, name, `${key}: renameByDefault, so shared GPUs are nvidia.com/gpu.shared`);
    check(s.resources?.length === 1 && s.resources[0].name === "nvidia.com/gpu" && s.resources[0].replicas >= 2, name, `${key}: resources`);
    kinds.push(modes[0]);
  }
  check(kinds.includes("mps") && kinds.includes("timeSlicing"), name, "both an MPS and a time-slicing configuration");
}

// ---- main ---------------------------------------------------------------------------------------------------

fs.mkdirSync(path.join(outDir, "configs"), { recursive: true });
const facts = { probes: [], queries: [], autoscalers: {}, renders: [] };
for (const arg of renders) {
  const m = /^([\w.-]+)=([\w+-]+):(.+)$/.exec(arg);
  if (!m) {
    fail(arg, "expected NAME=PROFILE:FILE");
    continue;
  }
  const [, name, profileText, file] = m;
  const [device, ...extras] = profileText.split("+");
  const profile = { device: device === "kserve" ? "gpu" : device, kserve: device === "kserve", autoscaler: extras[0] };
  console.log(`${name} (${profileText}): ${file}`);
  const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
  const objs = [];
  for (const d of docs) {
    if (d.errors.length) fail(name, `YAML: ${d.errors[0].message}`);
    else if (d.contents !== null) objs.push(d.toJS());
  }
  objs.forEach((o, i) => validateSchema(o, `${name}: ${o?.kind ?? "?"} ${o?.metadata?.name ?? `#${i}`}`));
  checkSteno(name, objs, profile, facts);
  facts.renders.push(name);
}
facts.metrics = [...new Set(facts.queries.flatMap((q) => q.query.match(/\b(nv|steno)_[a-z_]+\b/g) ?? []))];
fs.writeFileSync(path.join(outDir, "facts.json"), JSON.stringify(facts, null, 2));
console.log(`check_manifests: ${renders.length} renders, ${failures} failure(s)`);
process.exit(failures ? 1 : 0);
