"""The 'cpu' target: leaf nodes compiled to machine code through LLVM.

Matcher: every kernel node without barriers, every constant node, and
every tensor op, taken natively: lowered to kernels here, register-tiled
for the widest vectors the machine has (``register_tiles``); with the
option ``blas``, large matmuls and gemms run through numpy's BLAS instead.
Code generator: one optimised LLVM module per node kernel (codegen/); the
artifact keeps the portable module and the optimised IR, so loading it in
another process only re-runs machine-code generation.  Runtime shim: host
memory (numpy arrays), each node run by its JIT-compiled entry with
replication dimension 0 split across the cores.

With the option ``triple`` (e.g. ``aarch64-linux-gnu``) the artifact holds
object code for that machine instead; it cannot be loaded here.
"""
from __future__ import annotations

import functools
import math
from typing import Any

from hpvm.errors import TargetError
from hpvm.ir.graph import ConstantBody, Graph, KernelBody, Module, Node, TensorBody
from hpvm.ir.analysis import uses_barrier
from hpvm.ir.tensor_ops.precision import LOWERED_PRECISIONS
from hpvm.options import Option
from hpvm.target import Artifact, Availability, Knob, NodeRef, Target

from .device import CpuDevice

MODULE_FILE = "module.hpvm"
OBJECT_FILE = "kernels.o"

OPTIONS = [
    Option("opt_level", int, 3, "LLVM optimisation level", minimum=0, maximum=3),
    Option("threads", int, None, "threads a node's instances are split across; None: every "
           "core, in 4 chunks each handed out as cores come free (so too for as many threads "
           "as cores or more); fewer threads: one chunk each", minimum=1),
    Option("lanes", int, 16, "adjacent instances run together in vector lanes; 0 or 1: none",
           minimum=0, maximum=256),
    Option("rows", int, 1, "rows of lane strips run together; 1: none", minimum=1, maximum=16),
    Option("cpu_model", str, None, "LLVM CPU model code is made for (znver4, sapphirerapids, "
           "x86-64-v3, neoverse-v2 ...); None: $HPVM_CPU_MODEL, else this machine"),
    Option("triple", str, None, "make object code for this LLVM triple "
           "(aarch64-linux-gnu ...) instead of code that runs here"),
    Option("register_tiles", bool, True, "run kernel loop nests that reuse their reads "
           "across instances (matrix products ...) as register tiles over packed panels "
           "(the register-tile pass, sizes from this machine's vector registers)"),
    Option("tile_rows", int, 0, "register-tile: rows of results per tile (0: the model's)",
           minimum=0, maximum=32),
    Option("tile_panel", int, 0, "register-tile: columns of results per instance (0: the "
           "model's)", minimum=0, maximum=4096),
    Option("blas", bool, False, "run large matmuls and gemms (2^22 multiply-adds or more) "
           "through the BLAS numpy links instead of generated code (its threads spin "
           "between calls and slow the kernels after them: in models, slower)"),
    Option("pack_weights", bool, True, "lay out the constant weights of matrix products and "
           "convolutions for the register tiles once, when compiling (a second copy of those "
           "weights is kept), instead of packing them in every call"),
    Option("channels_last", bool, True, "store the activations passing between convolutions "
           "channels-last (NHWC), where their kernels can, instead of NCHW: each pixel's "
           "channels are then a run of vectors"),
    Option("fuse_attention", bool, True, "run a matmul, the row program (softmax) on its "
           "result and the matmul reading that as one attention node computing the scores a "
           "block of rows at a time, never stored whole (where every listed target takes it)"),
]
BLAS_OPS = frozenset({"matmul", "gemm"})
"""Tensor ops the cpu runs through numpy's BLAS when option ``blas`` is on
and they are large.  Off by default: OpenBLAS's threads spin for a while
after each call and take the cores from the kernels that follow (on 16
cores MobileNetV2 at batch 8 took 119 ms with BLAS for its classifier, 22
without); the packed matrix products (packed_products.py) run 2048^3 within
15% of it on 2 cores, and BERT-sized layers faster in a model."""
BLAS_MIN_PRODUCTS = 1 << 22
"""Multiply-adds (counting only the sizes known when compiling) from which a
product goes to BLAS."""


def _pipeline(cores: int = 0) -> str:
    """The default pipeline, its loop-instances cutting strips of columns
    for ``cores`` (0: none); with cores, the tasks loop-interchange leaves
    with several loops (a column's sum kept in its output, then finished)
    are split again, their row walks then run in strips."""
    sized = f"{{cores={cores}}}" if cores else ""
    outward = f"{{outward=true cores={cores}}}" if cores else "{outward=true}"
    again = f"task-split{sized}," if cores else ""
    return (f"node-fusion,copy-propagation,scratch-expansion,task-split{sized},"
            f"loop-instances{{reused=true}},loop-instances{outward},loop-interchange,loop-tile,"
            f"{again}loop-instances{sized},loop-jam,dce")


class CpuTarget(Target):
    name = "cpu"
    description = "multicore CPUs through LLVM (llvmlite): x86-64, AArch64, RISC-V"
    default_pipeline = _pipeline()
    """A task running several loops in turn runs each as a node of its
    own where one of them can then run as instances (task-split); a task
    whose two loops read values reused across both (a matrix
    product written as loops) runs them as instances of a node of two
    dimensions, which register-tile schedules (PolyBench 3.2's gemm at
    1024^3 on two cores: 78 -> 18.7 ms, numpy's BLAS 10); a nest whose
    outer loop's iterations share what they write runs a loop further in
    whose iterations share nothing as the instances, swapped outwards
    before loop-interchange cuts it into strips (PolyBench's symm at 1024
    on two cores: 376 -> 175 ms); a scratch buffer that every iteration
    of a task's loop writes whole before reading it gets a row per
    iteration (scratch-expansion: PolyBench's doitgen at 1024 on two
    cores, 1168 -> 486 ms); fusing nodes
    keeps intermediates out of memory (camera: 1.6x on cpu),
    time steps updated in place included, which run out of place then;
    outputs that copy another buffer are not made (copy-propagation: heat
    steps in place, copied back and from an old copy at 4096^2 on two
    cores: 49 / 54 / 81 ms -> 26 / 26 / 26);
    a loop nest that walks its arrays column by column where it may walk
    them row by row is swapped (a 2048 x 2048 scaling: 63 -> 1.9 ms on
    two cores; LLVM's own interchange is off by default), and one that
    walks arrays along both of its loops runs in blocks (a + b^T at
    2048^2: 39 -> 10 ms); a loop whose inner loop waits on a chain of
    float sums runs 8 of its iterations' chains side by side (loop-jam:
    rows of a matrix-vector product written as loops, 2048^2, 8.7 ->
    1.2 ms on two cores, bit for bit); and a task that is one loop over
    independent iterations runs them as the node's instances, over the
    cores and vector lanes (loop-instances: the same product in one task,
    1.00 -> 0.64 ms)."""

    def pipeline_for(self, options: dict) -> str:
        """The default pipeline, a nest whose rows share what they update
        while its columns do not cut into strips of columns for this
        machine's cores, or the threads asked for (strip_instances.py:
        atax's ``y[j] += A[i, j] * tmp[i]`` at 4096^2 on 16 cores: 6.2 ->
        1.5 ms)."""
        return _pipeline(_threads(options))

    def availability(self) -> Availability:
        try:
            import llvmlite
            from .codegen.machine import host_cpu
        except ImportError as error:  # llvmlite missing or broken
            return Availability.no(f"llvmlite cannot be imported ({error}); pip install llvmlite")
        triple, cpu = host_cpu()[:2]
        return Availability.yes(f"llvmlite {llvmlite.__version__}, {cpu} ({triple}); LLVM runs "
                                "in a compile worker process")

    def options(self) -> list[Option]:
        return OPTIONS

    native_precisions = frozenset(LOWERED_PRECISIONS)
    """What its kernels compute (and BLAS products, run as the interpreter's);
    TF32 has no kernel form, and rounding operands on a CPU saves nothing."""

    @property
    def native_tensor_ops(self) -> frozenset[str]:
        """Every op: compile lowers them itself, with its own tiles."""
        from hpvm.ir.tensor_ops import TENSOR_OPS
        return frozenset(TENSOR_OPS)

    def knobs(self, module: Module, nodes: list[NodeRef]) -> list[Knob]:
        """Vector lanes and rows of lane strips, for the whole program; the
        register tiles' rows and panel, or none (the program as written),
        where a node qualifies for them; the layout of activations between
        convolutions and pools, where there are some."""
        knobs = [Knob("lanes", (1, 4, 8, 16), 16), Knob("rows", (1, 2, 4), 1)]
        if _has_layout_ports(module, nodes):
            knobs.append(Knob("channels_last", (True, False), True))
        from hpvm.passes.register_tile import eligible_nodes
        if eligible_nodes(module):
            knobs += [Knob("register_tiles", (True, False), True, as_written=False),
                      Knob("tile_rows", (0, 4, 6, 8), 0),
                      Knob("tile_panel", (0, 256, 512, 1024), 0)]
        return knobs

    def passes(self, options: dict) -> str:
        """register-tile with this machine's vector width and registers;
        element-promotion: an element a loop updates is kept in a register
        while it runs, where the loop's other accesses of its buffer are
        never to it (PolyBench's trmm at 1024 on two cores: 110 -> 20 ms,
        bit for bit; LLVM cannot tell the rows apart); then
        infer-reductions: loops folding with an exact op (integer ops,
        float min/max) fold in vector lanes as reduce()'s do."""
        if not options.get("register_tiles", True):
            return "element-promotion,infer-reductions"
        from .codegen.machine import MachineSpec
        vector_bits = MachineSpec.from_options(options).vector_bits()
        rows, panel = options.get("tile_rows") or 0, options.get("tile_panel") or 0
        return (f"register-tile{{vector_bits={vector_bits} registers="
                f"{32 if vector_bits >= 512 else 16} cores={_threads(options)} rows={rows} "
                f"panel={panel}}},element-promotion,infer-reductions")

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        if isinstance(node.body, (ConstantBody, TensorBody)):
            return True
        if isinstance(node.body, KernelBody):
            return not uses_barrier(module, node.body.function)
        return False

    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        from hpvm.codegen.worker import warm_up
        from hpvm.passes.legalize_tensor_ops import lower_tensor_nodes
        from hpvm.passes.register_tile import SCHEDULE_ATTRIBUTE
        from .codegen.machine import MachineSpec
        from .codegen.pipeline import EMITTER
        triple = options.get("triple")
        # Workers start while the tensor ops are lowered: one per node (each
        # compiles to a kernel or more, in parallel), or one for the single
        # object file of a cross compile; none that no kernel will use (each
        # holds ~120 MB, and loads LLVM for half a second of a core, which
        # would overlap the program's first runs).
        warm_up((EMITTER.partition(":")[0],), 1 if triple else max(len(nodes), 1))
        blas = options.get("blas", False) and not triple
        vector_bits = MachineSpec.from_options(options).vector_bits()
        placed = {(ref.graph, ref.node) for ref in nodes}
        lowered = lower_tensor_nodes(module, lambda node: not (blas and worth_blas(node)),
                                     register_tiles(vector_bits, _threads(options)),
                                     relayout=options.get("pack_weights", True),
                                     pad_inputs=True,
                                     channels_last=(lambda graph, node: (graph, node.name)
                                                    in placed)
                                     if options.get("channels_last", True) else None)
        tensor_kernels = set(lowered.functions) - set(module.functions)
        module = lowered
        ranks = _kernel_ranks(module, nodes)
        tiled = {n.body.function for ref in nodes
                 for n in [module.graph(ref.graph).node(ref.node)]
                 if SCHEDULE_ATTRIBUTE in n.attributes}
        files = {MODULE_FILE: functools.partial(_module_text, module)}  # printed if saved
        metadata: dict[str, Any] = {"nodes": [str(n) for n in nodes], "kernels": ranks}
        if triple:
            from .codegen import emit_object
            files[OBJECT_FILE] = emit_object(module, ranks, triple=triple,
                                             cpu=options.get("cpu_model"))
            metadata["triple"] = triple
            return Artifact(self.name, files, metadata)
        from .codegen import kernel_code

        def machine_code(function: str):
            # The register tiles are made for the widest vectors.
            wide = {"vector_width": vector_bits} if function in tensor_kernels | tiled else {}
            return kernel_code(module, function, ranks[function],
                               {**_codegen_options(options), **wide})

        codes = _in_parallel(machine_code, list(ranks))
        notes = []
        for function, code in codes.items():
            files[_ir_file(function)] = code.llvm_ir.encode()
            notes.extend(code.notes)
        if notes:
            metadata["notes"] = notes
        return Artifact(self.name, files, metadata, live={"module": module, "codes": codes})

    def load(self, artifact: Artifact, options: dict) -> CpuDevice:
        triple = artifact.metadata.get("triple")
        if triple:
            raise TargetError(f"this cpu artifact holds object code for {triple}; it runs only "
                              "there (link kernels.o into a program for that machine)")
        from hpvm.ir.text import parse_module
        from .codegen.abi import ArgumentLayout
        from .codegen.compiler import DEFAULT_LANES, load_optimised_ir
        from .codegen.jit import CompiledKernel
        module = artifact.live.get("module") or parse_module(
            artifact.files[MODULE_FILE].decode(), filename=MODULE_FILE)

        def machine_code(function: str):
            name = _ir_file(function)
            return load_optimised_ir(function, artifact.files[name].decode(errors="replace"),
                                     f"artifacts/cpu/{name}")

        ranks = artifact.metadata["kernels"]
        codes = artifact.live.get("codes", {})  # what this process compiled, else made here:
        codes = {**codes, **_in_parallel(machine_code, [f for f in ranks if f not in codes])}
        kernels = {}
        for function, rank in ranks.items():
            kernel = module.functions[function]
            kernels[function] = CompiledKernel(kernel, ArgumentLayout.of(kernel, rank),
                                               codes[function], options.get("threads"),
                                               lanes=options.get("lanes") or DEFAULT_LANES)
        return CpuDevice(module, kernels, options.get("threads"))


def _has_layout_ports(module: Module, nodes: list[NodeRef]) -> bool:
    """Whether a tensor node among ``nodes`` has activations its op may
    store channels-last."""
    from hpvm.ir.tensor_ops import get_op
    return any(isinstance(n.body, TensorBody) and get_op(n.body.op).layout_ports
               for ref in nodes for n in [module.graph(ref.graph).node(ref.node)])


def worth_blas(node: Node) -> bool:
    """Whether a matmul or gemm node is large enough for BLAS: about
    sqrt(|a| |b| |y|) multiply-adds, symbolic sizes counted as 1."""
    if node.body.op not in BLAS_OPS:
        return False
    sizes = [math.prod(d for d in p.type.shape if isinstance(d, int)) for p in node.body.params
             if p.is_buffer and p.name in ("a", "b", "y")]
    return math.isqrt(math.prod(sizes)) >= BLAS_MIN_PRODUCTS


def register_tiles(vector_bits: int, cores: int = 16):
    """Tiles of eight vector accumulators (each FMA's latency hidden by the
    seven others) in vector registers of ``vector_bits``: 8 x 16 f32 in
    AVX-512's zmm registers, 4 x 16 in AVX2's ymm, 4 x 8 in SSE's or
    NEON's 128-bit ones (of which there are 16 or 32: 32 counted only
    with AVX-512).  ``cores``: the threads a node's instances run on."""
    from hpvm.ir.tensor_ops.lowering import RegisterTiles
    wide = vector_bits >= 512
    return RegisterTiles(cols=16 if vector_bits >= 256 else 8, rows=8 if wide else 4,
                         vectors=True, registers=32 if wide else 16, cores=cores)


def _threads(options: dict) -> int:
    from hpvm.threads import available_cores
    return options.get("threads") or available_cores()


def _module_text(module: Module) -> bytes:
    from hpvm.ir.text import print_module
    return print_module(module).encode()


def _in_parallel(make, functions: list[str]) -> dict:
    """``{function: make(function)}``, made by as many threads as the
    compile worker pool has workers (each waits on LLVM in its own worker
    process); the first error is raised, after every thread has ended."""
    from hpvm.codegen.worker import compile_jobs
    jobs = min(compile_jobs(), len(functions))
    if jobs <= 1:
        return {function: make(function) for function in functions}
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(jobs, thread_name_prefix="hpvm-cpu-compile") as pool:
        return dict(zip(functions, pool.map(make, functions)))


def _codegen_options(options: dict) -> dict:
    return {k: options[k] for k in ("opt_level", "threads", "lanes", "rows", "cpu_model")
            if k in options}


def _ir_file(function: str) -> str:
    return f"{function}.ll"


def _kernel_ranks(module: Module, nodes: list[NodeRef]) -> dict[str, int]:
    """Function -> replication rank of the kernels ``nodes`` run, with
    those of the nodes padding their inputs (lower_tensor_nodes)."""
    from hpvm.passes.legalize_tensor_ops import padded_inputs
    ranks: dict[str, int] = {}
    for ref in nodes:
        graph = module.graph(ref.graph)
        node = graph.node(ref.node)
        for before in padded_inputs(graph, ref.node).values():
            ranks[before.body.function] = max(len(before.replication), 1)
        if isinstance(node.body, KernelBody):
            rank = max(len(node.replication), 1)
            if ranks.setdefault(node.body.function, rank) != rank:
                raise TargetError(f"cpu: function '@{node.body.function}' is used by nodes of "
                                  f"different replication ranks; give each its own function")
    return ranks
