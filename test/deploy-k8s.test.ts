import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { readConfig } from '../packages/server/src/config/config-file.js';
import { HEALTH_PATH, METRICS_PATH, READY_PATH } from '../packages/server/src/http/ops.js';

/**
 * deploy/k8s, checked without a cluster (kubeconform does not install here): every manifest against
 * a JSON schema of its kind (apiVersion, kind, and the fields the deployment relies on), then across
 * files: the probes on the service's real paths, the grace period above the drain, the selectors
 * matching the pods, the ServiceMonitor on the real metrics path, and the config the service's own
 * reader accepts. The compose file's service config goes through the same reader.
 */

const K8S = new URL('../deploy/k8s/', import.meta.url);
/** The HTTP drain of a stopping node (`drainMs` of lifecycle.ts), plus closing pages and flushing webhooks. */
const HTTP_DRAIN_S = 10;
const STOP_MARGIN_S = 5;
/** The Dockerfile's user: the pods must run as it (the image's data folder belongs to it). */
const IMAGE_UID = 10001;

type Manifest = Record<string, unknown> & { kind: string; apiVersion: string; metadata: { name: string } };

const manifests = new Map<string, Manifest>();
for (const file of readdirSync(K8S).filter((name) => name.endsWith('.yaml'))) {
  for (const document of parseAllDocuments(readFileSync(new URL(file, K8S), 'utf8'))) {
    expect(document.errors, file).toEqual([]);
    const value = document.toJS() as Manifest;
    manifests.set(value.kind, value);
  }
}

const labels = { type: 'object', additionalProperties: { type: 'string' }, minProperties: 1 };
const metadata = {
  type: 'object',
  required: ['name', 'labels'],
  properties: { name: { type: 'string', pattern: '^[a-z0-9-]+$' }, labels },
};
const matchLabels = { type: 'object', required: ['matchLabels'], properties: { matchLabels: labels } };
const object = (required: string[], properties: Record<string, unknown>) => ({ type: 'object', required, properties });
const probe = object(['httpGet', 'periodSeconds', 'failureThreshold'], {
  httpGet: object(['path', 'port'], { path: { type: 'string' }, port: { const: 'http' } }),
  periodSeconds: { type: 'integer', minimum: 1 },
  failureThreshold: { type: 'integer', minimum: 1 },
});
const envVar = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' } },
  oneOf: [
    { required: ['value'], properties: { value: { type: 'string' } } },
    {
      required: ['valueFrom'],
      properties: {
        valueFrom: object(['secretKeyRef'], {
          secretKeyRef: object(['name', 'key'], { name: { type: 'string' }, key: { type: 'string' } }),
        }),
      },
    },
  ],
};
const manifest = (apiVersion: string, kind: string, spec?: unknown) =>
  object(spec === undefined ? ['apiVersion', 'kind', 'metadata'] : ['apiVersion', 'kind', 'metadata', 'spec'], {
    apiVersion: { const: apiVersion },
    kind: { const: kind },
    metadata,
    ...(spec === undefined ? {} : { spec }),
  });

const SCHEMAS: Record<string, unknown> = {
  Kustomization: object(['apiVersion', 'kind', 'resources'], {
    apiVersion: { const: 'kustomize.config.k8s.io/v1beta1' },
    resources: { type: 'array', items: { type: 'string', pattern: '\\.yaml$' } },
  }),
  ConfigMap: { ...manifest('v1', 'ConfigMap'), required: ['apiVersion', 'kind', 'metadata', 'data'] },
  Deployment: manifest(
    'apps/v1',
    'Deployment',
    object(['replicas', 'selector', 'template'], {
      replicas: { type: 'integer', minimum: 2 },
      selector: matchLabels,
      template: object(['metadata', 'spec'], {
        metadata: object(['labels'], { labels }),
        spec: object(['terminationGracePeriodSeconds', 'securityContext', 'containers'], {
          terminationGracePeriodSeconds: { type: 'integer', minimum: 1 },
          securityContext: object(['runAsNonRoot', 'runAsUser'], {
            runAsNonRoot: { const: true },
            runAsUser: { const: IMAGE_UID },
          }),
          containers: {
            type: 'array',
            minItems: 1,
            maxItems: 1,
            items: object(['name', 'image', 'ports', 'env', 'readinessProbe', 'livenessProbe'], {
              image: { type: 'string', minLength: 1 },
              ports: {
                type: 'array',
                contains: object(['name', 'containerPort'], {
                  name: { const: 'http' },
                  containerPort: { type: 'integer' },
                }),
              },
              env: { type: 'array', items: envVar },
              readinessProbe: probe,
              livenessProbe: probe,
            }),
          },
        }),
      }),
    }),
  ),
  Service: manifest(
    'v1',
    'Service',
    object(['selector', 'ports'], {
      selector: labels,
      ports: {
        type: 'array',
        minItems: 1,
        items: object(['name', 'port', 'targetPort'], {
          name: { type: 'string' },
          port: { type: 'integer' },
          targetPort: { const: 'http' },
        }),
      },
    }),
  ),
  PodDisruptionBudget: manifest('policy/v1', 'PodDisruptionBudget', {
    ...object(['selector'], {
      selector: matchLabels,
      maxUnavailable: { type: 'integer', minimum: 1 },
      minAvailable: { type: 'integer', minimum: 1 },
    }),
    oneOf: [{ required: ['maxUnavailable'] }, { required: ['minAvailable'] }],
  }),
  ServiceMonitor: manifest(
    'monitoring.coreos.com/v1',
    'ServiceMonitor',
    object(['selector', 'endpoints'], {
      selector: matchLabels,
      endpoints: {
        type: 'array',
        minItems: 1,
        items: object(['port', 'path'], { port: { type: 'string' }, path: { type: 'string' } }),
      },
    }),
  ),
};

const ajv = new Ajv2020({ allErrors: true, strict: false });
function check(kind: string): string[] {
  const validate = ajv.compile(SCHEMAS[kind] as object);
  validate(manifests.get(kind));
  return (validate.errors ?? []).map((e: ErrorObject) => `${e.instancePath} ${e.message}`);
}

function get<T>(value: unknown, ...path: (string | number)[]): T {
  let at = value;
  for (const step of path) at = (at as Record<string | number, unknown>)[step];
  return at as T;
}

interface Container {
  env: { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
  ports: { name: string; containerPort: number }[];
  readinessProbe: { httpGet: { path: string }; periodSeconds: number; failureThreshold: number };
  livenessProbe: { httpGet: { path: string } };
  volumeMounts?: { name: string; mountPath: string }[];
}

const temp = mkdtempSync(join(tmpdir(), 'realtime-k8s-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** A config file's text read by the service's own reader, as `realtime serve --config` does. */
function serviceConfig(text: string) {
  const path = join(temp, 'realtime.json');
  writeFileSync(path, text);
  return readConfig(path, false);
}

describe('deploy/k8s', () => {
  it('holds each kind the deployment needs once, and the kustomization lists every file', () => {
    expect([...manifests.keys()].sort()).toEqual(Object.keys(SCHEMAS).sort());
    const files = readdirSync(K8S).filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml');
    expect(get<string[]>(manifests.get('Kustomization'), 'resources').sort()).toEqual(files.sort());
  });

  for (const kind of Object.keys(SCHEMAS)) {
    it(`${kind} matches its schema`, () => {
      expect(check(kind)).toEqual([]);
    });
  }

  it('the schemas catch what they are for (a wrong apiVersion, a missing probe, root)', () => {
    const deployment = structuredClone(manifests.get('Deployment') as Manifest);
    manifests.set('Deployment', { ...deployment, apiVersion: 'extensions/v1beta1' });
    expect(check('Deployment')).toContain('/apiVersion must be equal to constant');
    const broken = structuredClone(deployment);
    delete get<Record<string, unknown>>(broken, 'spec', 'template', 'spec', 'containers', 0).readinessProbe;
    get<Record<string, unknown>>(broken, 'spec', 'template', 'spec', 'securityContext').runAsUser = 0;
    manifests.set('Deployment', broken);
    const errors = check('Deployment');
    manifests.set('Deployment', deployment);
    expect(errors).toContain("/spec/template/spec/containers/0 must have required property 'readinessProbe'");
    expect(errors).toContain('/spec/template/spec/securityContext/runAsUser must be equal to constant');
  });

  it('probes the service’s real paths: readiness on /ready, liveness on /health, on the container’s port', () => {
    const container = get<Container>(manifests.get('Deployment'), 'spec', 'template', 'spec', 'containers', 0);
    expect(container.readinessProbe.httpGet.path).toBe(READY_PATH);
    expect(container.livenessProbe.httpGet.path).toBe(HEALTH_PATH);
    const port = container.env.find((variable) => variable.name === 'REALTIME_PORT')?.value;
    expect(Number(port)).toBe(container.ports.find((p) => p.name === 'http')?.containerPort);
  });

  it('takes Redis from a Secret and the config file from the ConfigMap, which the service’s reader accepts', () => {
    const spec = get<Record<string, unknown>>(manifests.get('Deployment'), 'spec', 'template', 'spec');
    const container = get<Container>(spec, 'containers', 0);
    const redis = container.env.find((variable) => variable.name === 'REALTIME_REDIS');
    expect(redis?.valueFrom?.secretKeyRef).toEqual({ name: 'realtime-redis', key: 'url' });
    const configPath = container.env.find((variable) => variable.name === 'REALTIME_CONFIG')?.value ?? '';
    const mount = container.volumeMounts?.find((m) => configPath.startsWith(`${m.mountPath}/`));
    const volume = get<{ name: string; configMap?: { name: string } }[]>(spec, 'volumes').find(
      (v) => v.name === mount?.name,
    );
    const configMap = manifests.get('ConfigMap') as Manifest;
    expect(volume?.configMap?.name).toBe(configMap.metadata.name);
    const file = configPath.slice((mount?.mountPath.length ?? 0) + 1);
    const config = serviceConfig(get<string>(configMap, 'data', file));
    expect(config.limits?.trustProxy).toBeDefined();
  });

  it('gives a stopping pod more time than its drain: shutdownDelayMs, above the readiness window, plus the HTTP drain', () => {
    const deployment = manifests.get('Deployment');
    const container = get<Container>(deployment, 'spec', 'template', 'spec', 'containers', 0);
    const config = serviceConfig(get<string>(manifests.get('ConfigMap'), 'data', 'realtime.json'));
    const delayS = (config.shutdownDelayMs ?? 0) / 1000;
    const probeWindowS = container.readinessProbe.periodSeconds * container.readinessProbe.failureThreshold;
    expect(delayS).toBeGreaterThan(probeWindowS);
    const grace = get<number>(deployment, 'spec', 'template', 'spec', 'terminationGracePeriodSeconds');
    expect(grace).toBeGreaterThan(delayS + HTTP_DRAIN_S + STOP_MARGIN_S);
  });

  it('selects the Deployment’s pods from the Service, the PodDisruptionBudget and the ServiceMonitor, which scrapes /metrics', () => {
    const podLabels = get<Record<string, string>>(
      manifests.get('Deployment'),
      'spec',
      'template',
      'metadata',
      'labels',
    );
    expect(get(manifests.get('Deployment'), 'spec', 'selector', 'matchLabels')).toEqual(podLabels);
    const service = manifests.get('Service') as Manifest;
    expect(podLabels).toMatchObject(get<Record<string, string>>(service, 'spec', 'selector'));
    expect(podLabels).toMatchObject(
      get<Record<string, string>>(manifests.get('PodDisruptionBudget'), 'spec', 'selector', 'matchLabels'),
    );
    const monitor = manifests.get('ServiceMonitor');
    expect(get<Record<string, string>>(service, 'metadata', 'labels')).toMatchObject(
      get<Record<string, string>>(monitor, 'spec', 'selector', 'matchLabels'),
    );
    const endpoint = get<{ port: string; path: string }>(monitor, 'spec', 'endpoints', 0);
    expect(endpoint.path).toBe(METRICS_PATH);
    expect(get<{ name: string }[]>(service, 'spec', 'ports').map((p) => p.name)).toContain(endpoint.port);
  });
});

describe('deploy/compose/realtime.json', () => {
  it('is read by the service, trusts exactly the address docker-compose.yml gives nginx, and delays the stop', () => {
    const config = serviceConfig(readFileSync(new URL('../deploy/compose/realtime.json', import.meta.url), 'utf8'));
    const compose = readFileSync(new URL('../docker-compose.yml', import.meta.url), 'utf8');
    const nginxAddress = /ipv4_address: ([\d.]+)/.exec(compose)?.[1];
    expect(config.limits?.trustProxy).toEqual([nginxAddress]);
    expect(config.shutdownDelayMs).toBeGreaterThan(0);
  });
});
