/** Provides the Mapflow client (undici, the secret) to the handler context (import it in handlers that call Mapflow). */
import { mapflowClient } from './mapflow.ts';
import { provideMapflowClient } from './providers.ts';

provideMapflowClient((config, options) => mapflowClient(config, options));
