/**
 * The error the construct throws at synth for a setting it cannot take.
 */
import { ValidationError } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** The name CDK shows for the error (aws-cdk-lib wants a literal string here, as its own `lit` tag makes). */
const ERROR_NAME = 'MapflowBridgeConfigError' as ConstructorParameters<typeof ValidationError>[0];

/**
 * Invalid MapflowBridge props or CDK context. A CDK `ValidationError`
 * (`Errors.isValidationError(e)` holds, as for aws-cdk-lib's own constructs),
 * carrying the path of the construct whose setting is wrong (`constructPath`),
 * which the CDK CLI prints beside the message.
 */
export class MapflowBridgeConfigError extends ValidationError {
  constructor(message: string, scope: IConstruct, options?: { cause?: unknown }) {
    super(ERROR_NAME, `MapflowBridge: ${message}`, scope);
    // ValidationError sets its own prototype; put this class's back so `instanceof MapflowBridgeConfigError` holds.
    Object.setPrototypeOf(this, new.target.prototype);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}
