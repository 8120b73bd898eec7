// The one lenient reading of an App's status, for the readers that must not
// trust it: the HTTP API, the CLI and the action rules. Status is input: a
// person with the status subresource, or an App written under an older CRD
// (the API server validates a status when it is written, not when the CRD
// changes), may hold anything. The reading is derived from AppStatusSchema, so
// the shape is declared once, and degrades field by field:
// - a field that is absent or does not match its schema is left out, alone:
//   not a crash, and not a whole status lost;
// - an object missing a required field of its own (a revision without its
//   number) is left out as that field of its parent, since a reader cannot use it;
// - a list keeps the entries it can read and drops the others;
// - keys the schema does not know are dropped (the API server prunes them from
//   real Apps anyway), so nothing unread, __proto__ included, reaches a reader.
// The operator's own reconcile parses status strictly; this is for showing
// it and for deciding what an action will do, where the operator decides again.
import { z } from 'zod';
import { type AppStatus, AppStatusSchema } from './status-schema.ts';

/**
 * The lenient form of a schema: objects field by field, lists entry by entry,
 * anything else as declared. What cannot be read is caught as undefined and
 * pruned after (zod transforms here would cost five times the parse).
 */
function lenient(schema: z.core.$ZodType): z.ZodType {
  if (schema instanceof z.ZodObject) {
    // z.object strips unknown keys, and drops the strict object's own refinements (none in status).
    return z.object(Object.fromEntries(Object.entries(schema.shape).map(([key, field]) => [key, lenientField(field)])));
  }
  // Length limits are the writer's (the CRD's): a reader shows what is there.
  if (schema instanceof z.ZodArray) return z.array(lenient(schema.element).optional().catch(caught));
  // Every schema of status is built with zod's classic API, as this file is.
  if (!(schema instanceof z.ZodType)) throw new TypeError('status schemas are built with zod/v4 classic');
  return schema;
}

/** An optional field that cannot be read is caught; a required one fails its object. */
function lenientField(field: z.core.$ZodType): z.ZodType {
  return field instanceof z.ZodOptional ? deferred(field.unwrap()).optional().catch(caught) : deferred(field);
}

/**
 * An object or list field's lenient form is built when a status first holds
 * the field, not at load: most statuses hold a few of them, and a command that
 * reads one status (`kubectl teal get`) would build the whole tree for nothing.
 */
function deferred(schema: z.core.$ZodType): z.ZodType {
  // z.lazy builds it at its first parse, once.
  return schema instanceof z.ZodObject || schema instanceof z.ZodArray
    ? z.lazy(() => lenient(schema))
    : lenient(schema);
}

// Whether the parse under way caught anything, so a status read whole (the usual case) is not walked again.
// Parsing is synchronous: readAppStatus resets it, parses, and reads it, with nothing in between.
let anythingCaught = false;
const caught = (): undefined => {
  anythingCaught = true;
  return undefined;
};

/** Takes out what was caught: keys left undefined, and list entries. Only on the fresh objects a parse made. */
function prune(value: unknown): void {
  if (Array.isArray(value)) {
    for (let i = value.length - 1; i >= 0; i -= 1) {
      if (value[i] === undefined) value.splice(i, 1);
      else prune(value[i]);
    }
  } else if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      if (object[key] === undefined) delete object[key];
      else prune(object[key]);
    }
  }
}

const LenientStatus = lenient(AppStatusSchema);

/**
 * The App's status as far as it can be read, as the schema types it: what
 * cannot be read is absent (see above); a status that is not an object reads
 * as an empty one. Reading a status already read gives it back unchanged.
 */
export function readAppStatus(raw: unknown): AppStatus {
  anythingCaught = false;
  const read = LenientStatus.safeParse(raw);
  if (!read.success) return {};
  if (anythingCaught) prune(read.data);
  // The derivation keeps every field's own schema, and only makes fields absent that are optional in AppStatus.
  return read.data as AppStatus;
}
