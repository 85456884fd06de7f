COPY store.dead_letters FROM '{dir}/store_dead_letters.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null 'event_id', quote '"', delimiter ',', header 1);
COPY store.erased_trajectories FROM '{dir}/store_erased_trajectories.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null 'trajectory_id', quote '"', delimiter ',', header 1);
COPY store.erasures FROM '{dir}/store_erasures.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null ('scope', 'target', 'erasure_id'), quote '"', delimiter ',', header 1);
COPY store.evolution_ledger FROM '{dir}/store_evolution_ledger.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null ('proposal_id', 'kind', 'surface', 'tenant', 'entry_id'), quote '"', delimiter ',', header 1);
COPY store.meta FROM '{dir}/store_meta.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null 'key', quote '"', delimiter ',', header 1);
COPY store.offsets FROM '{dir}/store_offsets.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null ('group_id', 'topic', 'partition', 'next_offset'), quote '"', delimiter ',', header 1);
COPY store.rewards FROM '{dir}/store_rewards.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null ('trajectory_id', 'tenant', 'reward_id'), quote '"', delimiter ',', header 1);
COPY store.steps FROM '{dir}/store_steps.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null ('trajectory_id', 'step_index', 'tenant'), quote '"', delimiter ',', header 1);
COPY store.trajectory_versions FROM '{dir}/store_trajectory_versions.csv' (FORMAT 'csv', allow_quoted_nulls false, force_not_null ('trajectory_id', 'version', 'tenant', 'event_id'), quote '"', delimiter ',', header 1);
