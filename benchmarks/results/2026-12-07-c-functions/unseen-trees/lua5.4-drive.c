#include <stdio.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
int main(void)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    if (luaL_dostring(L, "local t = {} for i = 1, 10 do t[#t + 1] = string.rep('x', i) end print(#table.concat(t))"))
        return 1;
    lua_close(L);
    return 0;
}
