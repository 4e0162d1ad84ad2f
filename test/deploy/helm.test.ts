/**
 * The Helm chart deploy/helm/voxd, rendered and checked as Kubernetes objects.
 *
 * THIS IS NOT HELM. helm is not installable here (no network beyond npm and Debian; Debian 12 has
 * no package), so ./template-subset.ts renders the small template subset the chart is written in
 * (listed at the top of that file) and throws on anything else. What it proves: with the default
 * values and with monitoring and autoscaling on, every template renders to YAML that parses; the
 * objects carry their required fields; names agree across objects (selectors and labels, volume
 * mounts and volumes, the PVC, ConfigMap and Secret the pod names, the HPA's target); the probes,
 * preStop and grace period are what docs/deploy.md promises; the ServiceMonitor scrapes /metrics;
 * the Ingress points at the Service and gives ingress-nginx proxy timeouts above the realtime idle
 * limit (so a WebSocket session is ended by voxd, not cut by the proxy); and server.json is a
 * config voxd itself accepts. What it cannot prove: that real helm renders
 * byte-for-byte the same, or that a cluster accepts the objects (no API-server schema here).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { loadServerConfig } from '../../src/config/server-config.js';
import { setting } from '../../src/config/settings.js';
import { createEngineCatalog } from '../../src/engines/catalog.js';
import { type ChartContext, mergeValues, Renderer } from './template-subset.js';

const CHART = fileURLToPath(new URL('../../../deploy/helm/voxd/', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

// biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects are checked field by field
type K8s = any;

const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as Record<string, string>;
const defaults = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
const templateFiles = Object.fromEntries(
  readdirSync(join(CHART, 'templates')).map((f) => [f, readFileSync(join(CHART, 'templates', f), 'utf8')]),
);
const renderer = new Renderer(templateFiles);

function context(overrides: Record<string, unknown>): ChartContext {
  return {
    Values: mergeValues(defaults, overrides) as Record<string, unknown>,
    Release: { Name: 'speech', Namespace: 'voice', Service: 'Helm' },
    Chart: { Name: chart.name!, Version: chart.version!, AppVersion: chart.appVersion! },
  };
}

/** Every manifest (not _helpers.tpl, not NOTES.txt) rendered and parsed; empty outputs are left out. */
function render(overrides: Record<string, unknown>): K8s[] {
  const ctx = context(overrides);
  const objects: K8s[] = [];
  for (const file of Object.keys(templateFiles).sort()) {
    if (file.startsWith('_') || !file.endsWith('.yaml')) continue;
    const text = renderer.render(file, ctx);
    if (text.trim() === '') continue;
    let object: K8s;
    try {
      object = parse(text);
    } catch (err) {
      throw new Error(`${file} rendered to YAML that does not parse: ${err}\n${text}`);
    }
    objects.push({ ...object, __file: file });
  }
  return objects;
}

function subset(small: Record<string, string> | undefined, big: Record<string, string> | undefined): boolean {
  if (small === undefined || big === undefined || Object.keys(small).length === 0) return false;
  return Object.entries(small).every(([k, v]) => big[k] === v);
}

/** The structural rules; returns the problems (empty: all hold). */
function check(objects: K8s[]): string[] {
  const problems: string[] = [];
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  for (const o of objects) {
    for (const field of ['apiVersion', 'kind']) if (!o[field]) problems.push(`${o.__file}: no ${field}`);
    const name = o.metadata?.name;
    if (typeof name !== 'string' || !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name)) {
      problems.push(`${o.__file}: metadata.name ${JSON.stringify(name)} is not a DNS-1123 label`);
    }
  }
  const [deployment] = byKind('Deployment');
  if (deployment === undefined) return [...problems, 'no Deployment'];
  const pod = deployment.spec?.template;
  const podLabels = pod?.metadata?.labels;
  if (!subset(deployment.spec?.selector?.matchLabels, podLabels)) {
    problems.push('the Deployment selector does not match its pod labels');
  }
  const container = pod?.spec?.containers?.[0];
  if (!container?.image) problems.push('the container has no image');
  const portNames = new Set((container?.ports ?? []).map((p: K8s) => p.name));
  for (const [probe, path] of [
    ['startupProbe', '/health'],
    ['livenessProbe', '/health'],
    ['readinessProbe', '/ready'],
  ] as const) {
    const get = container?.[probe]?.httpGet;
    if (get?.path !== path) problems.push(`${probe} asks ${get?.path}, not ${path}`);
    if (!portNames.has(get?.port)) problems.push(`${probe} port ${get?.port} is not a container port`);
  }
  if (!Array.isArray(container?.lifecycle?.preStop?.exec?.command)) problems.push('no preStop command');
  if (!Number.isInteger(pod?.spec?.terminationGracePeriodSeconds)) problems.push('no integer grace period');
  const volumes = new Map((pod?.spec?.volumes ?? []).map((v: K8s) => [v.name, v]));
  for (const mount of container?.volumeMounts ?? []) {
    if (!volumes.has(mount.name)) problems.push(`volumeMount ${mount.name} has no volume`);
  }
  for (const v of volumes.values() as Iterable<K8s>) {
    if (v.configMap && !byKind('ConfigMap').some((c) => c.metadata.name === v.configMap.name)) {
      problems.push(`volume ${v.name}: no ConfigMap ${v.configMap.name}`);
    }
    if (v.persistentVolumeClaim) {
      const claim = v.persistentVolumeClaim.claimName;
      const made = byKind('PersistentVolumeClaim').some((c) => c.metadata.name === claim);
      if (!made) problems.push(`volume ${v.name}: no PVC ${claim}`);
    }
  }
  for (const service of byKind('Service')) {
    if (!subset(service.spec?.selector, podLabels))
      problems.push('the Service selects no pod of the Deployment');
    for (const p of service.spec?.ports ?? []) {
      if (!portNames.has(p.targetPort))
        problems.push(`Service targetPort ${p.targetPort} is not a container port`);
    }
  }
  for (const monitor of byKind('ServiceMonitor')) {
    const service = byKind('Service')[0];
    if (!subset(monitor.spec?.selector?.matchLabels, service?.metadata?.labels)) {
      problems.push('the ServiceMonitor selects no Service');
    }
    const servicePorts = new Set((service?.spec?.ports ?? []).map((p: K8s) => p.name));
    for (const e of monitor.spec?.endpoints ?? []) {
      if (e.path !== '/metrics') problems.push(`the ServiceMonitor scrapes ${e.path}`);
      if (!servicePorts.has(e.port)) problems.push(`the ServiceMonitor port ${e.port} is not a Service port`);
    }
  }
  const idleMs = (() => {
    const configMap = byKind('ConfigMap')[0];
    const config = configMap ? JSON.parse(configMap.data?.['server.json'] ?? '{}') : {};
    return config.realtime_idle_timeout_ms ?? setting('realtime_idle_timeout_ms').default!;
  })();
  for (const ingress of byKind('Ingress')) {
    const service = byKind('Service')[0];
    const servicePorts = new Set((service?.spec?.ports ?? []).map((p: K8s) => p.name));
    for (const rule of ingress.spec?.rules ?? []) {
      for (const path of rule.http?.paths ?? []) {
        const backend = path.backend?.service;
        if (backend?.name !== service?.metadata?.name)
          problems.push('the Ingress backend is not the Service');
        if (!servicePorts.has(backend?.port?.name))
          problems.push(`the Ingress backend port ${backend?.port?.name} is not a Service port`);
      }
    }
    // A WebSocket through ingress-nginx lives as long as its proxy timeouts allow between frames:
    // they must outlast voxd's own idle limit, so that voxd ends a quiet session, not the proxy.
    for (const which of ['read', 'send']) {
      const seconds = Number(
        ingress.metadata?.annotations?.[`nginx.ingress.kubernetes.io/proxy-${which}-timeout`],
      );
      if (idleMs > 0 && !(seconds * 1000 > idleMs))
        problems.push(
          `the Ingress proxy-${which}-timeout (${seconds} s) is not above realtime_idle_timeout_ms`,
        );
    }
  }
  for (const hpa of byKind('HorizontalPodAutoscaler')) {
    const target = hpa.spec?.scaleTargetRef;
    if (target?.kind !== 'Deployment' || target?.name !== deployment.metadata.name) {
      problems.push('the HPA does not target the Deployment');
    }
    if (!(hpa.spec.minReplicas >= 1 && hpa.spec.maxReplicas >= hpa.spec.minReplicas)) {
      problems.push('the HPA replica bounds are wrong');
    }
    if (deployment.spec.replicas !== undefined) problems.push('replicas set while the HPA owns the count');
  }
  return problems;
}

function find(objects: K8s[], kind: string): K8s {
  const found = objects.find((o) => o.kind === kind);
  assert.ok(found, `no ${kind} among ${objects.map((o) => o.kind).join(', ')}`);
  return found;
}

const KEYS = { apiKeys: { keys: 'k-admin:admin,k-app:inference' } };

describe('Helm chart deploy/helm/voxd (rendered by a template subset, not helm)', () => {
  test('the default values alone stop at the missing API keys, with the remedy named', () => {
    assert.throws(() => render({}), /set apiKeys\.keys .*apiKeys\.existingSecret.*insecure=true/);
  });

  test('default values plus keys: Deployment, ConfigMap, PVC, Service and Secret, all consistent', () => {
    const objects = render(KEYS);
    assert.deepEqual(objects.map((o) => o.kind).sort(), [
      'ConfigMap',
      'Deployment',
      'PersistentVolumeClaim',
      'Secret',
      'Service',
    ]);
    assert.deepEqual(check(objects), []);
    for (const o of objects) assert.ok(o.metadata.name.startsWith('speech-voxd'), o.metadata.name);
    const deployment = find(objects, 'Deployment');
    assert.equal(deployment.apiVersion, 'apps/v1');
    assert.equal(deployment.spec.replicas, 1);
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    assert.equal(container.image, 'voxd:0.1.0');
    assert.deepEqual(container.args, [
      'serve',
      '--config',
      '/etc/voxd/server.json',
      '--host',
      '0.0.0.0',
      '--port',
      '8080',
    ]);
    assert.deepEqual(container.lifecycle.preStop.exec.command, ['sleep', '5']);
    // ceil(30000 / 1000) + preStop 5 + margin 5.
    assert.equal(pod.terminationGracePeriodSeconds, 40);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    // The same uid as the Dockerfile's USER, so the volume's fsGroup and the image agree.
    const dockerUser = /^USER\s+(\d+)/m.exec(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'))?.[1];
    assert.equal(String(pod.securityContext.runAsUser), dockerUser);
    assert.deepEqual(
      container.volumeMounts.map((m: K8s) => [m.name, m.mountPath]),
      [
        ['data', '/data'],
        ['config', '/etc/voxd'],
      ],
    );
    const secret = find(objects, 'Secret');
    const keyRef = container.env.find((e: K8s) => e.name === 'VOXD_API_KEYS').valueFrom.secretKeyRef;
    assert.equal(keyRef.name, secret.metadata.name);
    assert.equal(secret.stringData[keyRef.key], 'k-admin:admin,k-app:inference');
    assert.equal(
      pod.volumes.find((v: K8s) => v.name === 'data').persistentVolumeClaim.claimName,
      find(objects, 'PersistentVolumeClaim').metadata.name,
    );
  });

  test('server.json in the ConfigMap is a config voxd accepts, with the chart default deadline', () => {
    const configMap = find(render(KEYS), 'ConfigMap');
    const dir = mkdtempSync(join(tmpdir(), 'voxd-helm-'));
    try {
      const path = join(dir, 'server.json');
      writeFileSync(path, configMap.data['server.json']);
      const { config } = loadServerConfig({
        configPath: path,
        overrides: { models_root: join(dir, 'models') },
        knownFamilies: [...createEngineCatalog().keys()],
      });
      assert.equal(config.shutdown_timeout_ms, 30000);
      assert.deepEqual(
        config.models.map((m) => m.id),
        ['flite', 'espeak', 'pocketsphinx', 'silero-vad', 'diarizer'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the grace period follows shutdown_timeout_ms and the preStop sleep; an explicit one wins', () => {
    const grace = (values: Record<string, unknown>) =>
      find(render({ ...KEYS, ...values }), 'Deployment').spec.template.spec.terminationGracePeriodSeconds;
    assert.equal(grace({ config: { shutdown_timeout_ms: 12001 }, preStopSleepSeconds: 3 }), 13 + 3 + 5);
    assert.equal(grace({ config: { shutdown_timeout_ms: 60000 } }), 60 + 5 + 5);
    assert.equal(grace({ terminationGracePeriodSeconds: 300 }), 300);
    const deployment = find(render({ ...KEYS, preStopSleepSeconds: 9 }), 'Deployment');
    assert.deepEqual(deployment.spec.template.spec.containers[0].lifecycle.preStop.exec.command, [
      'sleep',
      '9',
    ]);
  });

  test('monitoring, autoscaling and an existing Secret: a ServiceMonitor on /metrics and an HPA on the queue', () => {
    const objects = render({
      apiKeys: { existingSecret: 'voxd-keys' },
      monitoring: { serviceMonitor: { enabled: true, labels: { release: 'prometheus' } } },
      autoscaling: { enabled: true },
      persistence: { existingClaim: 'shared-models' },
    });
    assert.deepEqual(objects.map((o) => o.kind).sort(), [
      'ConfigMap',
      'Deployment',
      'HorizontalPodAutoscaler',
      'Service',
      'ServiceMonitor',
    ]);
    const problems = check(objects).filter((p) => !p.includes('no PVC shared-models'));
    assert.deepEqual(problems, []);
    const monitor = find(objects, 'ServiceMonitor');
    assert.equal(monitor.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(monitor.metadata.labels.release, 'prometheus');
    assert.deepEqual(monitor.spec.endpoints, [{ port: 'http', path: '/metrics', interval: '15s' }]);
    const hpa = find(objects, 'HorizontalPodAutoscaler');
    assert.equal(hpa.apiVersion, 'autoscaling/v2');
    assert.deepEqual(hpa.spec.metrics, [
      {
        type: 'Pods',
        pods: {
          metric: { name: 'voxd_queued_requests' },
          target: { type: 'AverageValue', averageValue: '2' },
        },
      },
    ]);
    assert.deepEqual([hpa.spec.minReplicas, hpa.spec.maxReplicas], [2, 6]);
    const pod = find(objects, 'Deployment').spec.template.spec;
    assert.equal(pod.containers[0].env[1].valueFrom.secretKeyRef.name, 'voxd-keys');
    assert.equal(pod.volumes[0].persistentVolumeClaim.claimName, 'shared-models');
  });

  test('the Ingress carries WebSocket upgrades: ingress-nginx timeouts above the realtime idle limit, the Service as backend', () => {
    // The chart's value is voxd's own default, so the derived timeouts match an untouched voxd.
    assert.equal(
      (defaults.config as Record<string, unknown>).realtime_idle_timeout_ms,
      setting('realtime_idle_timeout_ms').default,
    );
    const objects = render({
      ...KEYS,
      ingress: {
        enabled: true,
        host: 'voxd.example.com',
        tlsSecretName: 'voxd-tls',
        annotations: { 'cert-manager.io/cluster-issuer': 'letsencrypt' },
      },
    });
    assert.deepEqual(objects.map((o) => o.kind).sort(), [
      'ConfigMap',
      'Deployment',
      'Ingress',
      'PersistentVolumeClaim',
      'Secret',
      'Service',
    ]);
    assert.deepEqual(check(objects), []);
    const ingress = find(objects, 'Ingress');
    assert.equal(ingress.apiVersion, 'networking.k8s.io/v1');
    assert.equal(ingress.spec.ingressClassName, 'nginx');
    // ceil(300000 / 1000) + margin 60: above the 300 s idle limit in server.json.
    assert.deepEqual(ingress.metadata.annotations, {
      'nginx.ingress.kubernetes.io/proxy-read-timeout': '360',
      'nginx.ingress.kubernetes.io/proxy-send-timeout': '360',
      'nginx.ingress.kubernetes.io/proxy-body-size': '256m',
      'cert-manager.io/cluster-issuer': 'letsencrypt',
    });
    const server = JSON.parse(find(objects, 'ConfigMap').data['server.json']);
    assert.equal(server.realtime_idle_timeout_ms, 300000);
    assert.deepEqual(ingress.spec.tls, [{ secretName: 'voxd-tls', hosts: ['voxd.example.com'] }]);
    assert.deepEqual(ingress.spec.rules, [
      {
        host: 'voxd.example.com',
        http: {
          paths: [
            {
              path: '/',
              pathType: 'Prefix',
              backend: { service: { name: 'speech-voxd', port: { name: 'http' } } },
            },
          ],
        },
      },
    ]);
    // The pods' grace period still covers voxd's drain, which ends each realtime session (its turn,
    // then shutting_down and 1001) within shutdown_timeout_ms.
    const grace = find(objects, 'Deployment').spec.template.spec.terminationGracePeriodSeconds;
    assert.ok(grace * 1000 > server.shutdown_timeout_ms);

    const timeouts = (values: Record<string, unknown>) => {
      const annotations = find(render({ ...KEYS, ...values }), 'Ingress').metadata.annotations;
      return ['read', 'send'].map((w) => annotations[`nginx.ingress.kubernetes.io/proxy-${w}-timeout`]);
    };
    assert.deepEqual(timeouts({ ingress: { enabled: true }, config: { realtime_idle_timeout_ms: 600001 } }), [
      '661',
      '661',
    ]);
    assert.deepEqual(timeouts({ ingress: { enabled: true, proxyTimeoutSeconds: 3600 } }), ['3600', '3600']);
    // Without a host: one rule for every host, no TLS.
    const plain = find(render({ ...KEYS, ingress: { enabled: true, className: '' } }), 'Ingress');
    assert.equal(plain.spec.rules[0].host, undefined);
    assert.equal(plain.spec.tls, undefined);
    assert.equal(plain.spec.ingressClassName, undefined);
    assert.throws(
      () => render({ ...KEYS, ingress: { enabled: true, tlsSecretName: 'voxd-tls' } }),
      /ingress\.tlsSecretName needs ingress\.host/,
    );
  });

  test('insecure: no Secret, no key variable, and --insecure on the command line', () => {
    const objects = render({ insecure: true, persistence: { enabled: false } });
    assert.deepEqual(objects.map((o) => o.kind).sort(), ['ConfigMap', 'Deployment', 'Service']);
    assert.deepEqual(check(objects), []);
    const container = find(objects, 'Deployment').spec.template.spec.containers[0];
    assert.equal(container.args.at(-1), '--insecure');
    assert.ok(!container.env.some((e: K8s) => e.name === 'VOXD_API_KEYS'));
    assert.deepEqual(find(objects, 'Deployment').spec.template.spec.volumes[0], {
      name: 'data',
      emptyDir: {},
    });
  });

  test('NOTES.txt renders and names the grace period', () => {
    const notes = renderer.render('NOTES.txt', context(KEYS));
    assert.match(notes, /grace period is 40 s/);
    assert.match(notes, /svc\/speech-voxd /);
  });

  // The checks must be able to fail: each breaks one link between the objects.
  const breakages: [string, (objects: K8s[]) => void, RegExp][] = [
    [
      'a pod label',
      (o) => delete find(o, 'Deployment').spec.template.metadata.labels['app.kubernetes.io/name'],
      /selector/,
    ],
    [
      'a volume',
      (o) => find(o, 'Deployment').spec.template.spec.volumes.pop(),
      /volumeMount config has no volume/,
    ],
    [
      'the readiness path',
      (o) => (find(o, 'Deployment').spec.template.spec.containers[0].readinessProbe.httpGet.path = '/health'),
      /readinessProbe/,
    ],
    [
      'the ServiceMonitor path',
      (o) => (find(o, 'ServiceMonitor').spec.endpoints[0].path = '/'),
      /scrapes \//,
    ],
    [
      'the HPA target',
      (o) => (find(o, 'HorizontalPodAutoscaler').spec.scaleTargetRef.name = 'other'),
      /HPA does not target/,
    ],
    ['a name', (o) => (find(o, 'Service').metadata.name = 'Bad_Name'), /DNS-1123/],
    [
      'the Ingress backend',
      (o) => (find(o, 'Ingress').spec.rules[0].http.paths[0].backend.service.port.name = 'web'),
      /Ingress backend port web/,
    ],
    [
      'the Ingress timeout',
      (o) =>
        (find(o, 'Ingress').metadata.annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'] = '60'),
      /proxy-read-timeout \(60 s\) is not above realtime_idle_timeout_ms/,
    ],
  ];
  for (const [what, breakIt, problem] of breakages) {
    test(`the checks catch a broken ${what}`, () => {
      const objects = render({
        ...KEYS,
        monitoring: { serviceMonitor: { enabled: true } },
        autoscaling: { enabled: true },
        ingress: { enabled: true },
      });
      assert.deepEqual(check(objects), []);
      breakIt(objects);
      const problems = check(objects);
      assert.ok(
        problems.some((p) => problem.test(p)),
        `expected ${problem}, got ${JSON.stringify(problems)}`,
      );
    });
  }

  test('the renderer refuses what it does not implement and unknown values', () => {
    const ctx = context(KEYS);
    const one = (source: string) => new Renderer({ 'a.yaml': source }).render('a.yaml', ctx);
    assert.throws(() => one('{{ range .Values.x }}{{ end }}'), /outside the supported subset/);
    assert.throws(() => one('{{ .Values.nope }}'), /nope is not set/);
    assert.throws(() => one('{{ lower "X" }}'), /"lower" is outside/);
    assert.equal(
      one('a:\n  {{- if .Values.insecure }} x{{ else }} {{ add 1 (div 7 2) }}{{ end }}\n'),
      'a: 4\n',
    );
  });
});
