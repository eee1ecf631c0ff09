import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Chart } from 'cdk8s';
import { App } from '../../src/cdk8s';
import * as pulumi from '@pulumi/pulumi';
import { Registered, settle } from './pulumi';

/** The Kubernetes objects a cdk8s chart synthesizes when `build` adds constructs to it. */
export function cdk8sObjects(build: (chart: Chart) => void, namespace?: string): Record<string, unknown>[] {
  const app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'tw-parity-')) });
  const chart = new Chart(app, 'parity', namespace ? { namespace } : {});
  build(chart);
  return chart.toJson();
}

/**
 * The Kubernetes resources the Pulumi mocks registered (type, name, inputs) once registration settled, with the
 * parent each one's URN names (`tunnelwright:index:<Construct>` for a component's child).
 */
export async function pulumiObjects(seen: Registered[], build: () => { kubernetesResources?: pulumi.CustomResource[] } | void): Promise<{ type: string; name: string; inputs: Record<string, unknown>; parent?: string }[]> {
  const before = seen.length;
  const component = build();
  await settle();
  const parents = new Map<string, string>();
  for (const r of (component && component.kubernetesResources) || []) {
    const urn = await new Promise<string>((resolve) => r.urn.apply(resolve));
    // urn:pulumi:<stack>::<project>::<parent type>$<type>::<name>
    const [, , typeChain, name] = urn.split('::');
    const types = typeChain.split('$');
    if (types.length > 1) parents.set(name, types[types.length - 2]);
  }
  return seen.slice(before).filter((r) => r.type.startsWith('kubernetes:')).map((r) => ({ type: r.type, name: r.name, inputs: r.inputs, ...(parents.has(r.name) ? { parent: parents.get(r.name) } : {}) }));
}

/** The Pulumi type token of a Kubernetes object: `kubernetes:<apiVersion>:<kind>`. */
export function typeToken(o: Record<string, unknown>): string {
  return `kubernetes:${String(o.apiVersion)}:${String(o.kind)}`;
}

/** Objects in a stable order (by kind and metadata), for comparing sets whose registration order may differ. */
export function sortObjects(list: Record<string, unknown>[]): Record<string, unknown>[] {
  const key = (o: Record<string, unknown>) => `${String(o.kind)} ${JSON.stringify(o.metadata)}`;
  return [...list].sort((a, b) => key(a).localeCompare(key(b)));
}
