/**
 * Binds every Task state of the catalogue to its handler, in process: the
 * same modules the CDK construct bundles into Lambda functions, loaded from
 * functions/handlers/<fn>.ts and wrapped so they behave like Lambda
 * invocations (see lambda.ts).
 */
import { TASKS, type HandlerName } from '../../functions/handlers/catalog.ts';
import { asTaskResource, type LambdaHandler } from './lambda.ts';
import type { TaskResource } from './engine.ts';
import { installCpuWorkers } from './workers.ts';

/** The local name of each function, as in the definition's ARNs. */
export function localFunctionName(fn: HandlerName): string {
  return `mapflow-bridge-${fn}`;
}

/** Task state name -> in-process resource, for every entry of TASKS. */
export async function loadTaskResources(): Promise<Record<string, TaskResource>> {
  // GeoJSON validation and GeoTIFF inspection leave the shared event loop (one Lambda each on AWS).
  installCpuWorkers();
  const resources: Record<string, TaskResource> = {};
  for (const task of TASKS) {
    const module = (await import(`../../functions/handlers/${task.fn}.ts`)) as { handler?: LambdaHandler };
    if (typeof module.handler !== 'function') {
      throw new Error(`functions/handlers/${task.fn}.ts does not export a handler function (Task state '${task.state}').`);
    }
    resources[task.state] = asTaskResource(module.handler, { functionName: localFunctionName(task.fn), stateName: task.state });
  }
  return resources;
}
