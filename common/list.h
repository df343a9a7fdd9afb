/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Intrusive doubly linked lists, after systemd's list.h: an item carries its own NEXT and
 * PREV pointers (any field names, so one item can sit on two lists) and a head points at
 * the first item. The unlinked item keeps its own pointers: a walk that is at it can still
 * step on.
 */

/* item first on the list at head */
#define LIST_PREPEND(next, prev, head, item)                 \
        do {                                                 \
                typeof(item) _list_item = (item);            \
                _list_item->prev = NULL;                     \
                _list_item->next = (head);                   \
                if (_list_item->next)                        \
                        _list_item->next->prev = _list_item; \
                (head) = _list_item;                         \
        } while (0)

/* item off the list at head (it must be on it) */
#define LIST_REMOVE(next, prev, head, item)                          \
        do {                                                         \
                typeof(item) _list_item = (item);                    \
                if (_list_item->prev)                                \
                        _list_item->prev->next = _list_item->next;   \
                else                                                 \
                        (head) = _list_item->next;                   \
                if (_list_item->next)                                \
                        _list_item->next->prev = _list_item->prev;   \
        } while (0)
