{{ config(materialized='view', indexes=[{'columns': ['customer_id']}]) }}

select id, customer_id, status, amount, ordered_at, cast(ordered_at as date) as ordered_on
from {{ ref('orders') }}
