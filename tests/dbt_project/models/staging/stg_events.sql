{{ config(materialized='view') }}

select id, customer_id, kind, occurred_at
from {{ source('raw', 'events') }}
