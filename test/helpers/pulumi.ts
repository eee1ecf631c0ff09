import * as pulumi from '@pulumi/pulumi';
import * as settings from '@pulumi/pulumi/runtime/settings';

/** A resource the mocks saw registered. */
export interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
  provider?: string;
  custom?: boolean;
}

/** Installs Pulumi mocks that record every registered resource; call in beforeAll, before importing components. */
export function recordResources(): Registered[] {
  const seen: Registered[] = [];
  pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        seen.push({ type: args.type, name: args.name, inputs: args.inputs, provider: args.provider, custom: args.custom });
        return { id: `${args.name}-id`, state: args.inputs };
      },
      call: (args) => args.inputs,
    },
    'tunnelwright',
    'test',
    false,
  );
  return seen;
}

/** The value of an output. */
export function valueOf<T>(o: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => o.apply(resolve));
}

/**
 * Waits until every registration in flight has reached the mocks: @pulumi/pulumi's own drain of its RPC queue
 * (`runtime/settings.js` `waitForRPCs`, which `disconnect()` awaits), which also waits for registrations started
 * while it waits (an `apply` that registers a child). No timer: a loaded machine only makes it slower, never wrong.
 */
export function settle(): Promise<void> {
  return (settings as unknown as { waitForRPCs(): Promise<void> }).waitForRPCs();
}

/** What the mock monitor received for one registration: the URNs of its parent, provider reference, dependencies and aliases. */
export interface Request {
  type: string;
  name: string;
  parent: string;
  provider: string;
  dependencies: string[];
  aliases: { parentUrn?: string; noParent?: boolean }[];
}

/**
 * Records each RegisterResource request as the mock monitor receives it (call after `recordResources()`): the
 * mocks' `newResource` is not told a resource's parent or dependencies, the request is (`runtime/mocks.js`
 * `MockMonitor.registerResource`).
 */
export function recordRequests(): Request[] {
  const requests: Request[] = [];
  const monitor = (settings as unknown as { getMonitor(): { registerResource(req: unknown, cb: unknown): unknown } }).getMonitor();
  const register = monitor.registerResource.bind(monitor);
  monitor.registerResource = (req: unknown, cb: unknown) => {
    const r = req as {
      getType(): string; getName(): string; getParent(): string; getProvider(): string; getDependenciesList(): string[];
      getAliasesList(): { getSpec(): { getParenturn(): string; getNoparent(): boolean } | undefined }[];
    };
    requests.push({
      type: r.getType(),
      name: r.getName(),
      parent: r.getParent(),
      provider: r.getProvider(),
      dependencies: r.getDependenciesList(),
      aliases: r.getAliasesList().map((a) => {
        const spec = a.getSpec();
        return spec ? { ...(spec.getParenturn() ? { parentUrn: spec.getParenturn() } : {}), ...(spec.getNoparent() ? { noParent: true } : {}) } : {};
      }),
    });
    return register(req, cb);
  };
  return requests;
}
