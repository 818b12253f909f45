/** The user API's shapes the CLI names, from the generated OpenAPI types. */
import type { components } from "./api-types.ts";

type Schemas = components["schemas"];
export type Run = Schemas["Run"];
export type Workspace = Schemas["Workspace"];
export type Variable = Schemas["Variable"];
export type Project = Schemas["Project"];
export type VariableSet = Schemas["VariableSet"];
export type EffectiveVariable = Schemas["EffectiveVariable"];
