{{ config(materialized=incremental_materialization(), unique_key='id') }}

-- The incremental model: a later run reads only the events newer than what it holds and
-- merges them by id (delete+insert), so `loaded_by` tells which run wrote each row.
select id, customer_id, kind, occurred_at, '{{ invocation_id }}' as loaded_by
from {{ ref('stg_events') }}
{% if is_incremental() %}
where occurred_at > (select max(occurred_at) from {{ this }})
{% endif %}
