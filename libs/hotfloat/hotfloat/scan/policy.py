"""What bundle code may reach: an allow-list of (namespace, member) pairs, the one form each member that turns names
into code may take, and the names refused on any value with a message of their own.

In a verify child the sandbox contains code and scan is an early, precise message; in the engine, where the seam
router and the in-engine audit import the bundle into their own process, scan is what keeps it from trusted state."""

LIBDEVICE = (
    "abs acos asin atan atan2 cbrt ceil copysign cos cosh div_rn erf erfc erfinv exp exp10 exp2 expm1 "
    "fast_cosf fast_dividef fast_exp10f fast_expf fast_log2f fast_logf fast_powf fast_sinf fast_tanf "
    "float_as_int float_as_uint floor fma fmod hypot int_as_float isfinited isinf isnan lgamma llrint log log10 "
    "log1p log2 mulhi nearbyint popc pow rcp_rn remainder rint round rsqrt signbit sin sinh sqrt sqrt_rn tan "
    "tanh trunc uint_as_float"
)

ALLOWED: dict[str, tuple[str, str]] = {
    "torch": (
        "tensors, dtypes and the tensor math a torch kernel or a launcher computes with",
        (
            "Tensor Size device dtype finfo iinfo strided contiguous_format channels_last bfloat16 float16 half float32 "
            "float float64 double int8 int16 int32 int int64 long uint8 uint16 uint32 uint64 bool float8_e4m3fn "
            "float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz empty empty_like empty_strided zeros zeros_like ones ones_like "
            "full full_like arange linspace tensor as_tensor as_strided eye cat concat stack split chunk narrow reshape "
            "flatten transpose permute broadcast_to gather scatter index_select masked_fill repeat_interleave where tril "
            "triu flip roll unbind squeeze unsqueeze abs neg exp exp2 log log2 log1p expm1 sqrt rsqrt sigmoid tanh erf "
            "sin cos pow square reciprocal clamp maximum minimum max min amax amin sum mean prod cumsum logsumexp softmax "
            "log_softmax matmul mm bmm addmm baddbmm einsum outer dot isnan isinf isfinite argmax argmin topk sort floor "
            "ceil round trunc sign fmod remainder lerp allclose equal is_tensor is_floating_point numel promote_types "
            "result_type mul add sub div rms_norm layer_norm no_grad inference_mode"
        ),
    ),
    "torch.nn": ("only the way to torch.nn.functional", ""),
    "torch.nn.functional": (
        "the activations and norms a reference-style kernel calls",
        (
            "silu gelu relu sigmoid tanh softmax log_softmax softplus glu elu leaky_relu mish hardswish hardsigmoid linear "
            "layer_norm rms_norm normalize pad embedding one_hot scaled_dot_product_attention"
        ),
    ),
    "torch.cuda": (
        "device queries a launcher sizes its grid by; no streams, graphs, memory or set_*",
        ("is_available get_device_capability get_device_properties get_device_name current_device device_count"),
    ),
    "torch.distributed": (
        "the collectives of collective slots, on the process group the validator passes",
        (
            "all_reduce ReduceOp get_rank get_world_size send recv broadcast barrier all_gather all_gather_into_tensor "
            "reduce_scatter reduce_scatter_tensor all_to_all_single is_initialized is_available"
        ),
    ),
    "triton": (
        "the JIT decorator, autotuning and launch-size helpers",
        ("jit autotune Config heuristics cdiv next_power_of_2 reinterpret"),
    ),
    "triton.language": (
        "Triton's kernel builtins; none of its modules (core, math, standard, random, target_info)",
        (
            "PropagateNan TRITON_MAX_TENSOR_NUMEL abs add advance arange argmax argmin associative_scan assume atomic_add "
            "atomic_and atomic_cas atomic_max atomic_min atomic_or atomic_xchg atomic_xor bfloat16 bitonic_merge "
            "block_type broadcast broadcast_to cast cat cdiv ceil clamp condition const constexpr constexpr_type cos "
            "cumprod cumsum debug_barrier device_assert div_rn dot dot_scaled dtype erf exp exp2 expand_dims fdiv flip "
            "float16 float32 float64 float8e4b15 float8e4b8 float8e4nv float8e5 float8e5b16 floor fma full gather "
            "histogram inline_asm_elementwise int1 int16 int32 int64 int8 interleave join load load_tensor_descriptor log "
            "log2 make_block_ptr make_tensor_descriptor map_elementwise max max_constancy max_contiguous maximum min "
            "minimum mul multiple_of num_programs permute philox pi32_t pointer_type program_id rand rand4x randint "
            "randint4x randn randn4x range ravel reduce reduce_or reshape rsqrt sigmoid sin slice softmax sort split sqrt "
            "sqrt_rn squeeze static_assert static_range store store_tensor_descriptor sub sum swizzle2d tensor "
            "tensor_descriptor tensor_descriptor_type topk trans tuple tuple_type uint16 uint32 uint64 uint8 umulhi "
            "unsqueeze view void where xor_sum zeros zeros_like"
        ),
    ),
    "triton.language.extra": ("only the way to the CUDA extras and libdevice (not its re-exported pkgutil)", ""),
    "triton.language.extra.cuda": (
        "programmatic dependent launch; no clocks (globaltimer, smid)",
        ("gdc_wait gdc_launch_dependents num_threads num_warps"),
    ),
    "triton.language.extra.cuda.libdevice": ("CUDA's device math library", LIBDEVICE),
    "triton.language.extra.libdevice": ("the same library under its backend-neutral name", LIBDEVICE),
    "cutlass": (
        "the CuTe DSL's numeric types and compile-time control flow",
        (
            "Boolean Int8 Int16 Int32 Int64 Uint8 Uint16 Uint32 Uint64 Float16 BFloat16 Float32 Float64 TFloat32 "
            "Float8E4M3FN Float8E5M2 Numeric Constexpr const_expr dynamic_expr range range_constexpr min max full "
            "full_like Shape Stride Coord Layout Tensor Pointer IntTuple Tile"
        ),
    ),
    "cutlass.cute": (
        "CuTe layouts, tensors, copies and MMAs, and the kernel and jit decorators",
        (
            "kernel jit Pointer Tensor TensorSSA Layout ComposedLayout Shape Stride Coord Tile Tiler IntTuple Int32 Int64 "
            "Float32 Float16 BFloat16 Boolean size shape rank depth make_layout make_ordered_layout make_identity_tensor "
            "make_tensor make_rmem_tensor make_rmem_tensor_like make_fragment_like recast_ptr recast_tensor "
            "local_tile local_partition zipped_divide logical_divide tiled_divide flat_divide composition coalesce select "
            "slice_ group_modes copy autovec_copy basic_copy basic_copy_if make_copy_atom make_tiled_copy "
            "make_tiled_copy_tv make_mma_atom make_tiled_mma gemm CopyAtom MmaAtom TiledCopy TiledMma ceil_div round_up "
            "where full full_like zeros_like ones_like empty_like exp exp2 log log2 sqrt rsqrt tanh erf max min elem_less "
            "assume static crd2idx idx2crd domain_offset"
        ),
    ),
    "cutlass.cute.arch": (
        "thread and block indices, barriers, warp shuffles and votes; no clocks or raw PTX",
        (
            "thread_idx block_idx block_dim grid_dim lane_idx warp_idx barrier sync_threads sync_warp elect_one "
            "shuffle_sync shuffle_sync_bfly shuffle_sync_down shuffle_sync_up vote_ballot_sync vote_any_sync vote_all_sync "
            "fmax fmin rcp_approx exp2 warp_reduction_max warp_reduction_sum make_warp_uniform griddepcontrol_wait "
            "griddepcontrol_launch_dependents atomic_add WARP_SIZE fma_packed_f32x2 mul_packed_f32x2 add_packed_f32x2"
        ),
    ),
    "cutlass.cute.math": (
        "CuTe's device math",
        (
            "abs acos asin atan atan2 ceil copysign cos cosh erf erfc exp exp2 expm1 floor fma isfinite isinf isnan log "
            "log10 log1p log2 max min pow rcp round rsqrt sin sinh sqrt tan tanh trunc"
        ),
    ),
    "math": (
        "host-side scalar math for launch sizes and scales",
        (
            "acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees dist e erf erfc exp exp2 "
            "expm1 fabs factorial floor fmod frexp fsum gamma gcd hypot inf isclose isfinite isinf isnan isqrt lcm ldexp "
            "lgamma log log10 log1p log2 modf nan nextafter perm pi pow prod radians remainder sin sinh sqrt tan tanh tau "
            "trunc ulp"
        ),
    ),
    "__future__": ("postponed annotations", "annotations"),
    "typing": (
        "annotations (not get_type_hints or ForwardRef, which evaluate strings)",
        (
            "Annotated Any Callable ClassVar Dict Final Generic Iterable Iterator List Literal NamedTuple Optional Protocol "
            "Sequence Tuple TypeVar Union TYPE_CHECKING cast overload"
        ),
    ),
    "dataclasses": ("config records", "dataclass field replace"),
    "functools": ("caching configs per shape, folding shapes", "cache cached_property lru_cache partial reduce wraps"),
    "itertools": ("enumerating configs", "accumulate chain islice pairwise product repeat"),
    "enum": ("named modes", "Enum IntEnum auto"),
    "collections": ("small records and tables", "namedtuple defaultdict OrderedDict"),
    "operator": (
        "arithmetic as functions (not attrgetter or methodcaller, which read attributes by string)",
        ("add sub mul truediv floordiv mod neg pow and_ or_ xor eq ne lt le gt ge index"),
    ),
}
"""namespace -> (why kernels need it, the members they may use). A path passes only when each step is a listed
namespace or a member of the one before: `torch.utils` is not listed, so nothing under it is reachable."""
MEMBERS = {ns: frozenset(members.split()) for ns, (_, members) in ALLOWED.items()}

DENIED_ATTRS = {
    **dict.fromkeys(("cpp_extension", "load_inline", "compile_module_from_src"), "native extension build/load"),
    **dict.fromkeys(
        ("f_globals", "f_locals", "f_back", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame"),
        "frame introspection",
    ),
    **dict.fromkeys(("attrgetter", "methodcaller"), "attribute access by string (evades the attribute checks)"),
    "load_library": "native library load",
    "cudart": "raw CUDA runtime access",
    "ctypeslib": "FFI",
    "from_file": "file-system read",
    "get_type_hints": "evaluates strings as code",
}
"""Attribute names refused on any value with their own reason; a second net under VALUE_ATTRS (values.py), which
already leaves every one of them out."""

REEXPORTED_MODULES = frozenset(
    {
        "argparse",
        "ast",
        "atexit",
        "bltns",
        "builtins",
        "concurrent",
        "contextvars",
        "copyreg",
        "ctypes",
        "datetime",
        "dis",
        "gc",
        "glob",
        "gzip",
        "importlib",
        "inspect",
        "io",
        "linecache",
        "logging",
        "marshal",
        "mock",
        "mp",
        "multiprocessing",
        "os",
        "pathlib",
        "pickle",
        "pickletools",
        "pkgutil",
        "platform",
        "posix",
        "python_multiprocessing",
        "reducer",
        "reduction",
        "shutil",
        "signal",
        "socket",
        "subprocess",
        "synchronize",
        "sys",
        "sysconfig",
        "tarfile",
        "tempfile",
        "threading",
        "time",
        "tokenize",
        "traceback",
        "types",
        "unittest",
        "weakref",
        "wintypes",
        "zipfile",
    }
)
"""Names under which torch, numpy, triton and the stdlib re-export modules bundle code may not use (`torch.os`,
`enum.bltns`): refused as attributes of any value, and named in the refusal of a module path that reaches them."""

RESTRICTED = {
    "dataclasses.dataclass": (
        "class decorator",
        "only as @dataclass or @dataclass(literal options) on a class statement: it execs source built from the "
        "field names, which must be the class's own identifiers",
    ),
    "functools.wraps": (
        "def decorator",
        "only as @functools.wraps(f) on a def: `assigned`/`updated` are getattr/setattr by runtime string, and the "
        "wrapper it writes to must be the bundle's own function",
    ),
    "enum.Enum": ("base", "only as a base class: called with names it builds a class with any special method"),
    "enum.IntEnum": ("base", "only as a base class: called with names it builds a class with any special method"),
    "typing.NamedTuple": ("base", "only as a base class: called, it builds a class from runtime names"),
    "collections.namedtuple": (
        "literal call",
        "only with a literal type name and literal field names: it execs source built from them",
    ),
    "triton.language.inline_asm_elementwise": (
        "asm call",
        "only with literal register-only PTX and constraints (docs/security.md, 'Inline assembly')",
    ),
}
"""Allowed members that turn names or source text into code or attribute access, and the one form each may take
(checker.py enforces it at every use of the path, aliases included): (form, why)."""
