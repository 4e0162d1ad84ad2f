/** The part of the WebAssembly API voxd uses; Node has it, but its types live in TypeScript's DOM library. */
declare namespace WebAssembly {
  // biome-ignore lint/suspicious/noEmptyInterface: an opaque handle
  interface Module {}
  interface Instance {
    readonly exports: Record<string, unknown>;
  }
  type Imports = Record<string, Record<string, unknown>>;
  function compile(bytes: Uint8Array): Promise<Module>;
  function instantiate(module: Module, imports?: Imports): Promise<Instance>;
}
