// The ground grid: one square on y = u_height, four vertices from gl_VertexID (a triangle strip).
uniform mat4 u_view;
uniform mat4 u_proj;
uniform float u_height;
uniform float u_extent;

out vec3 v_world;

void main() {
  vec2 c = vec2((gl_VertexID & 1) != 0 ? 1.0 : -1.0, (gl_VertexID & 2) != 0 ? 1.0 : -1.0);
  v_world = vec3(c.x * u_extent, u_height, c.y * u_extent);
  gl_Position = u_proj * u_view * vec4(v_world, 1.0);
}
