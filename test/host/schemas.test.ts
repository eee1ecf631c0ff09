import { renderHostArtefacts } from '../../src';
import { checkCloudConfig, checkIgnition } from '../../src/testing';
import { describeWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { allHostVariants } from '../helpers/variants';

describeWithSchemas('host artefacts against the upstream schemas', () => {
  const variants = allHostVariants();

  it.each(variants.map((v) => [v.name, v] as const))('%s: the cloud-config passes the cloud-config schema', (_n, v) => {
    expect(checkCloudConfig(renderHostArtefacts(v.plan, v.ignitionVersion).cloudConfig, SCHEMA_DIR)).toEqual([]);
  });

  it.each(variants.map((v) => [v.name, v] as const))('%s: the Ignition config passes its spec schema', (_n, v) => {
    expect(checkIgnition(renderHostArtefacts(v.plan, v.ignitionVersion).ignition, SCHEMA_DIR)).toEqual([]);
  });
});
