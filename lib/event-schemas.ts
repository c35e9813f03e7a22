/**
 * EventSchemas: an EventBridge schema registry holding one JSON Schema
 * (draft-04, type JSONSchemaDraft4) per job event, generated from the same
 * TypeBox source as the exported TypeScript types (functions/events/types.ts).
 * Subscribers find the events in the console and the AWS toolkits and download
 * code bindings from there.
 */
import * as eventschemas from 'aws-cdk-lib/aws-eventschemas';
import { Construct } from 'constructs';
import type { EventDetailType } from '../functions/core/model.ts';
import { EVENT_DETAIL_SCHEMAS, eventBridgeSchemaDocument, type JobEventDetailType } from '../functions/events/types.ts';

/** Props of BridgeEventSchemas (MapflowBridge's `eventSchemaRegistry`). */
export interface BridgeEventSchemasProps {
  /** Source of the events (the bridge's eventSource). */
  readonly eventSource: string;
  /**
   * Name of the registry.
   * @default a name CloudFormation generates
   */
  readonly registryName?: string;
}

/** An EventBridge schema registry with the JSON Schema of every job event. */
export class BridgeEventSchemas extends Construct {
  /** The schema registry. */
  public readonly registry: eventschemas.CfnRegistry;
  /** One schema per detail-type (the same set as JobEventDetailType of `mapflow-bridge/events`). */
  public readonly schemas: Record<EventDetailType, eventschemas.CfnSchema>;

  constructor(scope: Construct, id: string, props: BridgeEventSchemasProps) {
    super(scope, id);
    if (props.registryName !== undefined && !/^[.\-_A-Za-z0-9]{1,64}$/.test(props.registryName)) {
      throw new Error(`MapflowBridge: eventSchemaRegistry.registryName '${props.registryName}' must be 1 to 64 letters, digits, '.', '-' or '_'`);
    }
    this.registry = new eventschemas.CfnRegistry(this, 'Registry', {
      ...(props.registryName && { registryName: props.registryName }),
      description: `mapflow-bridge job events (source ${props.eventSource})`,
    });
    const schemas: Partial<Record<JobEventDetailType, eventschemas.CfnSchema>> = {};
    for (const detailType of Object.keys(EVENT_DETAIL_SCHEMAS) as JobEventDetailType[]) {
      const title = String(EVENT_DETAIL_SCHEMAS[detailType].title);
      schemas[detailType] = new eventschemas.CfnSchema(this, title, {
        registryName: this.registry.attrRegistryName,
        // AWS names its own schemas <source>@<EventName>.
        schemaName: `${props.eventSource}@${title}`,
        type: 'JSONSchemaDraft4',
        content: JSON.stringify(eventBridgeSchemaDocument(detailType, props.eventSource)),
        description: `"${detailType}" event of mapflow-bridge`,
      });
    }
    this.schemas = schemas as Record<JobEventDetailType, eventschemas.CfnSchema>;
  }
}
