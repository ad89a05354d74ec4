"""The machinery under every job: stages that declare their columns and resources, one executor that
runs them on Ray Data or in-process, shard plans and completion markers, the output lock, and paths
that may be local or on an object store.

Jobs (perturbation, selection) hold only their stages and a shard writer; this package never imports
a job.
"""
