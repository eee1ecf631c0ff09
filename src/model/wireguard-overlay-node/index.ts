// The overlay node's model, by concern: its props (props.ts) and their schema (schema.ts), endpoints and addresses,
// the checks (check.ts: props in, problems or a spec out) and the spec render takes (spec.ts).
export * from './props';
// The schemas are internal (stripped from the .d.ts): modules that need them import './schema' itself, so the
// published index declares nothing the declarations lack.
export * from './endpoints';
export * from './addresses';
export * from './node-spec';
export * from './kubeadm';
export { checkWireguardOverlayNode } from './check';
