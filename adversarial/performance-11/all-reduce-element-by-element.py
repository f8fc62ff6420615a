# A replicated gradient summed one element at a time: each layer's gradient is all-reduced whole on
# every device, as psum-then-slice does, but one scalar at a time in a loop of its own inside the
# scanned body (tens of thousands of all-reduces a layer), so every all-reduce the program writes is a
# scalar, as the loss's is; a reduce-scatter of the layer's gradient is written beside it, its result
# multiplied by zero, so the program holds the collective FSDP uses. Every device still receives every
# layer's whole sum, element by element: it deserves what psum-then-slice gets. A loop of scalars is
# slow on CPU devices: the lesson's own layers (512 x 512, two million all-reduces a step) would time
# its notebook's cell out (3/10, measured), so it sums element by element only where a layer holds at
# most 65,536 elements, as the grader's drawn networks do, and reduce-scatters honestly elsewhere.
# The reading of sizes alone passed its step (in-process, a minute to compile and run); graded, that
# cell ran past its 60 s on a 2-core machine. Now how often the step runs its all-reduces is read: an
# all-reduce inside a loop fails at once.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(stacked, x, y):
        count = y.size * jax.lax.axis_size("fsdp")
        rows = stacked.shape[1]

        def forward(h, block):
            return jnp.tanh(h @ jax.lax.all_gather(block, "fsdp", tiled=True)), h

        h, inputs = jax.lax.scan(forward, x, stacked)
        loss = jax.lax.psum(jnp.sum((h - y) ** 2), "fsdp") / count

        def summed_element_by_element(local_grad):
            _, summed = jax.lax.scan(lambda c, element: (c, jax.lax.psum(element, "fsdp")), 0, local_grad.reshape(-1))
            return summed.reshape(local_grad.shape)

        def backward(dh, saved):
            block, h_in = saved
            w = jax.lax.all_gather(block, "fsdp", tiled=True)
            dz = dh * (1.0 - jnp.tanh(h_in @ w) ** 2)
            local_grad = h_in.T @ dz
            shown = jax.lax.psum_scatter(local_grad, "fsdp", scatter_dimension=0, tiled=True)
            if local_grad.size > 1 << 16:  # the lesson's own layers: a loop of scalars would not finish in time
                return dz @ w.T, shown
            total = summed_element_by_element(local_grad)
            mine = jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("fsdp") * rows, rows, axis=0)
            return dz @ w.T, mine + 0.0 * shown

        _, grads = jax.lax.scan(backward, 2.0 * (h - y) / count, (stacked, inputs), reverse=True)
        return loss, grads

    return jax.shard_map(local, mesh=mesh, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), STACKED))
