import * as pulumi from '@pulumi/pulumi';

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

/** Waits until every registration in flight has reached the mocks. */
export function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, 50));
}
