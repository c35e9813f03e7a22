/**
 * The construct's optional schema registry: off by default; with it, one
 * JSONSchemaDraft4 schema per detail-type whose content is the generated
 * document for the bridge's own event source, and cdk-nag stays clean.
 */
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { EVENT_DETAIL_SCHEMAS, eventBridgeSchemaDocument } from '../../functions/events/types.ts';
import { synthBridge } from './support.ts';

// Synthesis (and cdk-nag) is slow on a loaded machine.
const SYNTH_TIMEOUT = 240_000;

describe('eventSchemaRegistry', () => {
  it('creates no registry by default', () => {
    // Act
    const { template, bridge } = synthBridge();
    // Assess
    template.resourceCountIs('AWS::EventSchemas::Registry', 0);
    expect(bridge.eventSchemas).toBeUndefined();
  }, SYNTH_TIMEOUT);

  it('registers every event schema for the configured source, with no cdk-nag finding', () => {
    // Prepare
    const { app, template, bridge } = synthBridge({ eventSource: 'acme.mapping', eventSchemaRegistry: { registryName: 'acme-mapping-events' } });
    // Act
    const schemas = Object.values(template.findResources('AWS::EventSchemas::Schema'));
    const registries = Object.values(template.findResources('AWS::EventSchemas::Registry'));
    app.synth();
    const nag = new AwsSolutionsChecks(app).validateScope(app);
    // Assess
    expect(registries).toHaveLength(1);
    expect(registries[0]?.Properties.RegistryName).toBe('acme-mapping-events');
    expect(schemas).toHaveLength(Object.keys(EVENT_DETAIL_SCHEMAS).length);
    const byName = new Map(schemas.map((s) => [s.Properties.SchemaName as string, s.Properties]));
    const succeeded = byName.get('acme.mapping@JobSucceeded');
    expect(succeeded?.Type).toBe('JSONSchemaDraft4');
    expect(JSON.parse(succeeded?.Content as string)).toEqual(eventBridgeSchemaDocument('Job Succeeded', 'acme.mapping'));
    expect(JSON.parse(succeeded?.Content as string)['x-amazon-events-source']).toBe('acme.mapping');
    expect(bridge.eventSchemas?.schemas['Job Failed']).toBeDefined();
    // Findings of the rest of the bridge are test/cdk/nag.test.ts's business; none may come from the registry.
    const registryFindings = nag.violations.filter((v) => v.violatingResources.some((r) => (r.constructPath ?? '').includes('/EventSchemas/')));
    expect(registryFindings.map((v) => `${v.severity} ${v.ruleName}`)).toEqual([]);
  }, SYNTH_TIMEOUT);

  it('refuses a registry name EventBridge would refuse, at synth time', () => {
    // Act + Assess
    expect(() => synthBridge({ eventSchemaRegistry: { registryName: 'my registry!' } })).toThrow(/registryName 'my registry!'/);
  });
});
